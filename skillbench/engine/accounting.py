"""A finished run's spend against its plan (docs/results.md, `accounting`): the run's ledger
says what each kind of call cost, its session records what each arm cost, and a sequential
stop's sessions never run are priced at the mean of those that ran."""

from __future__ import annotations

from collections.abc import Iterable

from skillbench.models.ledger import Spend
from skillbench.results.records import SessionRecord
from skillbench.results.summary import Accounting


def accounting(
    ledger: Spend,
    records: Iterable[SessionRecord],
    *,
    planned: float | None,
    not_run: int,
) -> Accounting:
    """The run's accounting from its ledger's last state and its session records."""
    by_arm: dict[str, float] = {}
    sessions: dict[str, int] = {}
    refused, whole = 0, []
    for r in records:
        refused += r.stop_reason == "budget"
        if r.reused_from is not None or r.outcome == "skipped":
            continue  # a reused session cost this run nothing; a skipped one never ran
        by_arm[r.arm] = by_arm.get(r.arm, 0.0) + (r.cost_usd or 0.0)
        sessions[r.arm] = sessions.get(r.arm, 0) + 1
        if r.stop_reason != "budget":  # a session cut by the ceiling is no session's price
            whole.append(r.cost_usd or 0.0)
    mean = sum(whole) / len(whole) if whole else None
    return Accounting(
        planned_usd=None if planned is None else round(planned, 6),
        ceiling_usd=ledger.ceiling,
        spent_usd=round(ledger.spent, 6),
        by_kind={k: round(v, 6) for k, v in sorted(ledger.by_kind.items())},
        by_arm={k: round(v, 6) for k, v in by_arm.items()},
        sessions=sessions,
        refused_calls=ledger.refused,
        refused_sessions=refused,
        not_run=not_run,
        saved_usd=None if mean is None or not not_run else round(not_run * mean, 6),
    )
