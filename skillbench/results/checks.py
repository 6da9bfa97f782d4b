"""A check's result as a run keeps it (rows, session records, receipts); the checks that
produce it are skillbench/checks/run.py."""

from __future__ import annotations

import msgspec


class CheckResult(msgspec.Struct, frozen=True):
    """One check's outcome: its name as written, whether it passed, and why; a grader's or a
    reward's score; `infrastructure` when a verifier could give no verdict (exit 2); every
    named metric of a reward file; what a verifier script printed (its tails)."""

    name: str
    passed: bool
    detail: str = ""
    score: float | None = None
    infrastructure: bool = False
    metrics: dict[str, float] = {}
    output: str = ""


NO_VERDICT = "exit 2 (no verdict)"  # a verifier's exit 2 (docs/formats.md), as its detail opens
NO_METRIC = "no deciding metric"  # a reward file of several metrics, none chosen


def no_verdict(check: CheckResult) -> bool:
    """A verifier that exited 2: no trustworthy verdict. Whether that is the arm's failure or
    the harness's is decided against the other arm (results/rows.py: Margin's policy)."""
    return check.infrastructure and check.detail.startswith((NO_VERDICT, NO_METRIC))
