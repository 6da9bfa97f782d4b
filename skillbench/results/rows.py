"""Rows (docs/statistics.md): a row from two arms' sessions by their checks, the comparison of an
opponent's rows, and the why line. Pure functions over records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from skillbench.results.activation import FIRED_WHERE_NOT
from skillbench.results.checks import CheckResult, no_verdict
from skillbench.results.records import CANDIDATE, ArmResult, RowRecord, SessionRecord, Unit
from skillbench.results.stats import sign_test
from skillbench.results.summary import Comparison
from skillbench.results.verdict import MIN_NET_LIFT, UNSCORED, Outcome, RowLike, tally, verdict_of


def arm_result(unit: Unit, record: SessionRecord | None) -> ArmResult:
    """How one arm did on one unit: passed when every check passed; error when it errored."""
    if record is None or record.outcome == "error":
        return ArmResult(False, True, [])
    checks = record.checks.get(unit.name, [])
    metrics = {k: v for c in checks for k, v in c.metrics.items()}
    return ArmResult(all(c.passed for c in checks), False, checks, record.notes, metrics)


def environment_gap(check: CheckResult) -> bool:
    """A check that could not run: its command (or a grader's runtime) is not in the image."""
    return not check.passed and check.detail.startswith(("exit 126", "exit 127"))


def gap_in_both(mine: ArmResult, theirs: ArmResult) -> str | None:
    """Why a row measures nothing when a check hit an environment gap in both arms (both
    then fail it, so it would read as a tie); None when every check could run somewhere."""
    missing = {c.name for c in theirs.checks if environment_gap(c)}
    for check in mine.checks:
        if environment_gap(check) and check.name in missing:
            return (
                f"environment gap: {check.name} could not run in either arm "
                f"({check.detail[:200]}); the image lacks what it runs"
            )
    return None


def no_verdict_in_both(mine: ArmResult, theirs: ArmResult) -> str | None:
    """Why a row measures nothing when a verifier gave no verdict (exit 2) in both arms. In
    one arm only, the other arm's run of the same verifier, image and tests reaching a
    verdict is the evidence that the harness could judge: what differs is the workspace, so
    that arm fails the check, as Margin's policy has it (a candidate's import or build
    failure is a fail, infra only what is not attributable to the candidate)."""
    unjudged = {c.name for c in theirs.checks if no_verdict(c)}
    for check in mine.checks:
        if no_verdict(check) and check.name in unjudged:
            return f"{check.name} gave no verdict in either arm ({check.detail[:200]})"
    return None


def row_by_checks(
    unit: Unit, rep: int, opponent: str, cand: SessionRecord | None, opp: SessionRecord | None
) -> RowRecord | None:
    """The row when checks decide it (or it is unscored); None when the judge must decide."""
    arms = {CANDIDATE: arm_result(unit, cand), opponent: arm_result(unit, opp)}
    mine, theirs = arms[CANDIDATE], arms[opponent]

    def row(outcome: Outcome, decided_by: str, reason: str | None = None) -> RowRecord:
        return RowRecord(
            case=unit.name,
            rep=rep,
            opponent=opponent,
            outcome=outcome,
            decided_by=decided_by,
            arms=arms,
            reason=reason,
        )

    if mine.error or theirs.error:
        failed = [
            f"{arm} {'errored: ' + (r.error or 'no reason given') if r else 'has no session'}"
            for arm, r in ((CANDIDATE, cand), (opponent, opp))
            if r is None or r.outcome == "error"
        ]
        return row("unscored", "unscored", "; ".join(failed))
    gap = gap_in_both(mine, theirs)
    if gap:  # not a tie: nothing was measured (and no judge can stand in for the checks)
        return row("unscored", "environment-gap", gap)
    unjudged = no_verdict_in_both(mine, theirs)
    if unjudged:
        return row("unscored", "unscored", unjudged)
    if mine.passed != theirs.passed:
        return row("win" if mine.passed else "loss", "checks")
    if not unit.judge:
        return row("tie", "checks")
    return None


def compare(
    rows: Iterable[RowLike], opponent: str, min_net_lift: float = MIN_NET_LIFT
) -> Comparison:
    """The scored rows against `opponent`, their units, and the verdict those units give."""
    mine = [r for r in rows if r.opponent == opponent and r.decided_by not in UNSCORED]
    counts = Counter(r.outcome for r in mine)
    votes = tally(mine, opponent)
    return Comparison(
        win=counts["win"],
        loss=counts["loss"],
        tie=counts["tie"],
        net_lift=votes.net_lift,
        sign_p=sign_test(votes.win, votes.loss),
        units=votes,
        verdict=verdict_of(votes, min_net_lift),
    )


_SOURCES = {  # what decided a win or a loss, as the why line names it
    "checks": "execution checks",
    "judge": "the judge's rubric",
    "activation": f"activation (the skill {FIRED_WHERE_NOT})",
}


def why(rows: list[RowRecord]) -> str:
    """A deterministic one-line reason for the verdict."""
    if not rows:
        return "nothing could be scored"
    counts = Counter(r.outcome for r in rows if r.scored)
    if counts["win"] > counts["loss"]:
        lead, pick = "wins", "win"
    elif counts["loss"] > counts["win"]:
        lead, pick = "loses", "loss"
    else:
        lead, pick = "no net difference", None
    sources = {
        r.decided_by for r in rows if r.outcome != "tie" and (pick is None or r.outcome == pick)
    }
    named = [phrase for source, phrase in _SOURCES.items() if source in sources]
    if named:
        lead += " on " + ", ".join(named[:-1]) + " and " * (len(named) > 1) + named[-1]
    parts = [lead]
    ties = sum(r.outcome == "tie" and r.scored for r in rows)
    splits = sum(r.decided_by == "judge-split" for r in rows)
    if ties:
        parts.append(
            f"{ties} tie{'s' * (ties != 1)}" + (f" ({splits} judge-split)" if splits else "")
        )
    parts += unscored_parts(rows)
    return "; ".join(parts)


def unscored_parts(rows: Sequence[RowRecord]) -> list[str]:
    """How many rows measured nothing, by why."""
    parts = []
    for why_not, kinds in (
        ("infrastructure errors", {"unscored"}),
        ("environment gap: a check could not run in either arm", {"environment-gap"}),
        ("the judge could not answer", UNSCORED - {"unscored", "environment-gap"}),
    ):
        n = sum(r.decided_by in kinds for r in rows)
        if n:
            parts.append(f"{n} unscored ({why_not})")
    return parts


def nothing_scored(rows: list[RowRecord], stopped: str | None) -> str:
    """Why a run has verdict NONE."""
    parts = ["nothing scored", *unscored_parts(rows)]
    if stopped:
        parts.append(stopped)
    return "; ".join(parts)
