"""Why a row went the way it did, in words every text report shares (markdown, JUnit): the
failing checks of each arm with their detail, as the HTML report shows them per arm."""

from __future__ import annotations

from skillbench.results.records import CANDIDATE, ArmResult

MAX_DETAIL = 300  # a check's detail can be a verifier's whole output; a report line is short


def failing_checks(arms: dict[str, ArmResult]) -> list[str]:
    """`<arm>: <check> — <detail>` for every check that did not pass, the candidate's first
    (its failures are why a row is lost); an arm that errored says so when no check failed."""
    lines = []
    for arm in sorted(arms, key=lambda a: (a != CANDIDATE, a)):
        result = arms[arm]
        failed = [c for c in result.checks if not c.passed]
        for check in failed:
            detail = " ".join(check.detail.split())
            unnamed = [k for k in check.metrics if k not in detail]
            if unnamed:  # every metric of a reward file, also those that did not decide
                shown = ", ".join(f"{k} {v:g}" for k, v in sorted(check.metrics.items()))
                detail += f" (metrics: {shown})"
            if len(detail) > MAX_DETAIL:
                detail = detail[: MAX_DETAIL - 1] + "…"
            lines.append(f"{arm}: {check.name} — {detail or 'failed'}")
        if result.error and not failed:
            lines.append(f"{arm}: errored before its checks ran")
    return lines


def verifier_outputs(arms: dict[str, ArmResult]) -> list[str]:
    """`<arm>: <check> printed:` and the verifier's stdout and stderr tails, for every failing
    check that ran one: what the task's author needs to see why it failed."""
    return [
        f"{arm}: {check.name} printed:\n{check.output}"
        for arm in sorted(arms, key=lambda a: (a != CANDIDATE, a))
        for check in arms[arm].checks
        if not check.passed and check.output
    ]
