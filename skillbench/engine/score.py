"""Scoring (design §3, §16): rows from sessions, the units the verdict counts, the why line,
arm scores, case-runs passed and efficiency. Pure functions over records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from skillbench.checks import CheckResult
from skillbench.engine.activation import FIRED_WHERE_NOT, Activation, Ambient
from skillbench.engine.records import (
    AA,
    BASELINE,
    CANDIDATE,
    SUITE,
    ArmResult,
    Library,
    Plan,
    RowRecord,
    SessionRecord,
    Unit,
    session_key,
)
from skillbench.engine.stats import (
    Interval,
    Stats,
    cluster_ci,
    needed,
    pass_at_k,
    pass_pow_k,
    sign_test,
)
from skillbench.models import Endpoint, parse_model
from skillbench.verdict import (
    MIN_NET_LIFT,
    NONE,
    UNSCORED,
    RowLike,
    Votes,
    tally,
    unit_votes,
    verdict_of,
)


class Comparison(msgspec.Struct):
    """The candidate against one opponent: the scored rows, and the independent units the
    verdict counts (design §16)."""

    win: int  # rows
    loss: int
    tie: int
    net_lift: float | None  # over units: (units won - units lost) / units scored
    sign_p: float  # one-sided exact sign test over the decided units
    units: Votes = Votes()
    verdict: str = NONE  # PASS | NEUTRAL | FAIL | INCONCLUSIVE | NONE


class Efficiency(msgspec.Struct):
    turns: float
    seconds: float
    cost_usd: float | None
    input_tokens: float
    output_tokens: float


class Skipped(msgspec.Struct):
    case: str
    reason: str
    environment: bool = False  # the image lacks a `requires` tool: not the run's failing
    units: list[str] = []  # the scored units it would have had (a suite's sub-cases)


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


def row_by_checks(
    unit: Unit, rep: int, opponent: str, cand: SessionRecord | None, opp: SessionRecord | None
) -> RowRecord | None:
    """The row when checks decide it (or it is unscored); None when the judge must decide."""
    arms = {CANDIDATE: arm_result(unit, cand), opponent: arm_result(unit, opp)}
    mine, theirs = arms[CANDIDATE], arms[opponent]
    if mine.error or theirs.error:
        failed = [
            f"{arm} {'errored: ' + (r.error or 'no reason given') if r else 'has no session'}"
            for arm, r in ((CANDIDATE, cand), (opponent, opp))
            if r is None or r.outcome == "error"
        ]
        return RowRecord(
            case=unit.name,
            rep=rep,
            opponent=opponent,
            outcome="tie",
            decided_by="unscored",
            arms=arms,
            reason="; ".join(failed),
        )
    gap = gap_in_both(mine, theirs)
    if gap:  # not a tie: nothing was measured (and no judge can stand in for the checks)
        return RowRecord(
            case=unit.name,
            rep=rep,
            opponent=opponent,
            outcome="tie",
            decided_by="environment-gap",
            arms=arms,
            reason=gap,
        )
    if mine.passed != theirs.passed:
        outcome = "win" if mine.passed else "loss"
        return RowRecord(
            case=unit.name,
            rep=rep,
            opponent=opponent,
            outcome=outcome,
            decided_by="checks",
            arms=arms,
        )
    if not unit.judge:
        return RowRecord(
            case=unit.name,
            rep=rep,
            opponent=opponent,
            outcome="tie",
            decided_by="checks",
            arms=arms,
        )
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


def unit_runs(plan: Plan, skipped: set[str]) -> list[tuple[Unit, int]]:
    """Every (unit, rep) that is not skipped."""
    return [
        (u, rep) for u in plan.units if u.session not in skipped for rep in range(1, plan.k + 1)
    ]


def arm_scores(
    plan: Plan, sessions: dict[str, SessionRecord], skipped: set[str]
) -> dict[str, float | None]:
    """Per arm: the mean fraction of checks passed over its scored unit runs."""
    out: dict[str, float | None] = {}
    for arm in plan.arms:
        fractions = []
        for unit, rep in unit_runs(plan, skipped):
            record = sessions.get(session_key(unit.session, arm, rep))
            if record is None or record.outcome == "error":
                continue
            checks = record.checks.get(unit.name, [])
            if checks:
                fractions.append(sum(c.passed for c in checks) / len(checks))
        out[arm] = sum(fractions) / len(fractions) if fractions else None
    return out


def case_runs_passed(
    plan: Plan, sessions: dict[str, SessionRecord], skipped: set[str]
) -> dict[str, list[int]]:
    """Per arm: [unit runs passed, unit runs expected]."""
    runs = unit_runs(plan, skipped)
    out = {}
    for arm in plan.arms:
        passed = sum(
            arm_result(u, sessions.get(session_key(u.session, arm, r))).passed for u, r in runs
        )
        out[arm] = [passed, len(runs)]
    return out


def efficiency(plan: Plan, sessions: dict[str, SessionRecord]) -> dict[str, Efficiency]:
    """Per arm: mean turns, seconds, cost and tokens over its sessions that ran."""
    out = {}
    for arm in plan.arms:
        ran = [s for s in sessions.values() if s.arm == arm and s.outcome in ("pass", "fail")]
        if not ran:
            continue
        n = len(ran)
        costs = [s.cost_usd for s in ran]
        out[arm] = Efficiency(
            turns=sum(s.turns for s in ran) / n,
            seconds=sum(s.seconds for s in ran) / n,
            cost_usd=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs) / n,
            input_tokens=sum(s.usage.input_tokens + s.usage.cache_read_tokens for s in ran) / n,
            output_tokens=sum(s.usage.output_tokens for s in ran) / n,
        )
    return out


class Diagnostic(msgspec.Struct, frozen=True):
    """Something about the eval itself worth fixing (design §11): a check that cannot tell the
    arms apart, an environment gap read as a result, a flaky case."""

    kind: str  # non-discriminating | environment-gap | flaky
    case: str
    detail: str
    check: str | None = None


def diagnostics(
    plan: Plan,
    sessions: dict[str, SessionRecord],
    skipped: set[str],
    rows: Sequence[RowRecord] = (),
) -> list[Diagnostic]:
    """What the finished sessions and rows say about the eval's own quality."""
    found: list[Diagnostic] = []
    for unit in (u for u in plan.units if u.session not in skipped):
        ran = [
            (arm, rep, r)
            for arm in plan.arms
            for rep in range(1, plan.k + 1)
            if (r := sessions.get(session_key(unit.session, arm, rep))) is not None
            and r.outcome in ("pass", "fail")
        ]
        everyone = {a for a, _, _ in ran} == set(plan.arms)
        if (
            unit.session == SUITE
            and unit.distractor
            and everyone
            and all(arm_result(unit, r).passed for _, _, r in ran)
        ):
            # one line for the trap, not one per check. Only for a sub-case the suite marks
            # as a trap: a real defect every arm found is evidence, never something to drop.
            found.append(
                Diagnostic(
                    "suite-distractor",
                    unit.name,
                    "a trap nobody fell for: every arm passed all its checks in every "
                    "repetition, so it cannot tell the arms apart; make it tempting, or drop it",
                )
            )
            continue
        results: dict[str, list[CheckResult]] = {}
        for _, _, record in ran:
            for check in record.checks.get(unit.name, []):
                results.setdefault(check.name, []).append(check)
        for name, seen in results.items():
            if len(seen) < 2 or len({c.passed for c in seen}) != 1:
                continue
            if all(c.detail.startswith(("exit 126", "exit 127")) for c in seen):
                found.append(
                    Diagnostic(
                        "environment-gap",
                        unit.name,
                        "failed with exit 126/127 in every arm: the image lacks "
                        "what it runs, so its rows are unscored, not ties",
                        name,
                    )
                )
            else:
                state = "passed" if seen[0].passed else "failed"
                found.append(
                    Diagnostic(
                        "non-discriminating",
                        unit.name,
                        f"{state} in every arm and repetition: it cannot tell the arms apart",
                        name,
                    )
                )
        for arm in plan.arms:
            flags = [arm_result(unit, r).passed for a, _, r in ran if a == arm]
            if len(set(flags)) > 1:
                found.append(
                    Diagnostic(
                        "flaky", unit.name, f"{arm} passed {sum(flags)} of {len(flags)} repetitions"
                    )
                )
    position = judge_position(rows)
    if position is not None:
        first, answers = position
        bias = (
            " (position bias: it favours what it reads first, so swapped orders split and its "
            "rows tie; sharpen the rubric)"
            if answers >= 4 and not 0.25 <= first / answers <= 0.75
            else ""
        )
        found.append(
            Diagnostic(
                "judge-position",
                "",
                f"the judge picked the attempt shown "
                f"first in {first} of {answers} answers "
                f"({first / answers:.0%}){bias}",
            )
        )
    return found


def judge_position(rows: Sequence[RowRecord]) -> tuple[int, int] | None:
    """(answers naming the attempt shown first, answers naming either) over the judge's
    calls; None when the judge named no winner."""
    answers = [w for r in rows for w in r.judge_winners if w in ("A", "B")]
    return (answers.count("A"), len(answers)) if answers else None


class NoiseFloor(msgspec.Struct, frozen=True):
    """eval --aa: how often two independent baseline arms disagree on a unit."""

    flips: int
    compared: int
    flip_rate: float | None


def noise_floor(plan: Plan, sessions: dict[str, SessionRecord]) -> NoiseFloor | None:
    """Units and repetitions where the baseline and its A/A twin differ (pass vs fail)."""
    if AA not in plan.arms:
        return None
    flips = compared = 0
    for unit in plan.units:
        for rep in range(1, plan.k + 1):
            pair = [sessions.get(session_key(unit.session, arm, rep)) for arm in (BASELINE, AA)]
            if any(r is None or r.outcome not in ("pass", "fail") for r in pair):
                continue
            compared += 1
            a, b = (arm_result(unit, r).passed for r in pair if r is not None)
            flips += a != b
    return NoiseFloor(flips, compared, flips / compared if compared else None)


class RowSummary(msgspec.Struct, omit_defaults=True):
    """One row as the summary shows it."""

    case: str
    rep: int
    opponent: str
    outcome: str
    decided_by: str
    arms: dict[str, ArmResult]
    reason: str | None = None  # why an unscored row measured nothing


class Reuse(msgspec.Struct, frozen=True):
    """Baseline and incumbent sessions taken from earlier runs instead of run again."""

    sessions: int  # reused
    of: int  # baseline and incumbent sessions of the run
    runs: list[str]  # where they came from


class Summary(msgspec.Struct, kw_only=True):
    """What a run established (design §7 summary keys, plus arm scores, case runs and
    provenance): summary.json, `--json`, the report, JUnit and the receipt all read this."""

    skill: str
    version: str
    run_id: str
    verdict: str  # PASS | NEUTRAL | FAIL | INCONCLUSIVE | NONE (design §16)
    why: str
    expected_rows: int
    scored_rows: int
    partial: bool
    complete: bool
    stopped: str | None
    comparisons: dict[str, Comparison]
    rows: list[RowSummary]
    skipped: list[Skipped]
    triggers: dict[str, Any] | None = None  # TriggerReport.summary()
    efficiency: dict[str, Efficiency]
    arm_scores: dict[str, float | None]
    case_runs: dict[str, list[int]]  # arm -> [passed, expected]
    agent: str
    agent_version: str
    models: dict[str, str]  # agent, judge
    driver: str  # model | scripted
    endpoints: dict[str, Endpoint] = {}  # agent, judge: where each model was reached
    k: int
    seed: int
    stats: dict[str, Stats] = {}  # per opponent: power and intervals (design §11)
    diagnostics: list[Diagnostic] = []
    triggers_note: str | None = None  # why the triggers were not measured
    spend_usd: float = 0.0  # every call the run made: generation, sessions, judge, triggers
    reused: Reuse | None = None
    noise_floor: NoiseFloor | None = None  # eval --aa
    # design §16: was the skill loaded, what the CLI brought on its own, the library arm
    activation: Activation | None = None
    ambient: Ambient | None = None
    library: Library | None = None
    min_net_lift: float = MIN_NET_LIFT  # the practical floor the verdict used


def reuse_of(sessions: dict[str, SessionRecord]) -> Reuse | None:
    """How many of the run's baseline and incumbent sessions came from earlier runs."""
    opponents = [r for r in sessions.values() if r.arm != CANDIDATE]
    reused = [r for r in opponents if r.reused_from]
    if not reused:
        return None
    return Reuse(len(reused), len(opponents), sorted({str(r.reused_from) for r in reused}))


def summarize(
    plan: Plan,
    sessions: dict[str, SessionRecord],
    rows: list[RowRecord],
    skipped: list[Skipped],
    *,
    stopped: str | None = None,
) -> Summary:
    """The summary of a run from its records."""
    skipped_names = {s.case for s in skipped}
    # Complete: every row that could be measured was (a case the image cannot run is not the
    # run's failing; a failed setup, an error, a judge failure or a cost stop is).
    measurable = {s.case for s in skipped if s.environment}
    wanted = sum(u.session not in measurable for u in plan.units) * plan.k * len(plan.opponents)
    scripted = any(parse_model(ref).scripted for ref in (plan.model, plan.judge_model))
    runs = case_runs_passed(plan, sessions, skipped_names)
    names = [u.name for u in plan.units]

    def order(r: RowRecord) -> tuple[int, int, int]:
        return names.index(r.case), r.rep, plan.opponents.index(r.opponent)

    shown = [
        RowSummary(r.case, r.rep, r.opponent, r.outcome, r.decided_by, r.arms, r.reason)
        for r in sorted(rows, key=order)
    ]
    found = derive(
        shown,
        opponents=plan.opponents,
        units=plan.units,
        k=plan.k,
        seed=plan.seed,
        min_net_lift=plan.min_net_lift,
    )
    return Summary(
        skill=plan.skill,
        version=plan.version,
        run_id=plan.run_id,
        verdict=found.verdict,
        why=why([r for r in rows if r.opponent == plan.opponents[0]])
        if found.verdict != NONE
        else nothing_scored(rows, stopped),
        expected_rows=found.expected_rows,
        scored_rows=found.scored_rows,
        partial=found.scored_rows < found.expected_rows,
        complete=stopped is None and found.scored_rows == wanted,
        stopped=stopped,
        comparisons=found.comparisons,
        rows=shown,
        skipped=skipped,
        efficiency=efficiency(plan, sessions),
        arm_scores=arm_scores(plan, sessions, skipped_names),
        case_runs=runs,
        agent=plan.agent,
        agent_version=plan.agent_version,
        reused=reuse_of(sessions),
        models={"agent": plan.model, "judge": plan.judge_model},
        driver="scripted" if scripted else "model",
        endpoints=plan.endpoints,
        k=plan.k,
        seed=plan.seed,
        stats={
            opp: stats_of(plan, sessions, found.power[opp], opp, skipped_names)
            for opp in plan.opponents
        },
        diagnostics=diagnostics(plan, sessions, skipped_names, rows),
        noise_floor=noise_floor(plan, sessions),
        min_net_lift=plan.min_net_lift,
    )


class Power(msgspec.Struct, frozen=True, kw_only=True):
    """The part of an opponent's Stats that its rows alone decide."""

    decided: int  # units won + units lost
    needed: int | None
    underpowered: bool
    sign_p: float
    net_lift_ci: Interval | None  # a cluster bootstrap over the unit votes


class Derived(msgspec.Struct, frozen=True, kw_only=True):
    """What a run's rows establish: the verdict, the counts and the power of the test."""

    verdict: str  # against the first opponent (the baseline); NONE when nothing was scored
    verdicts: dict[str, str]  # per opponent
    expected_rows: int
    scored_rows: int
    comparisons: dict[str, Comparison]
    power: dict[str, Power]


def derive(
    rows: Sequence[RowSummary],
    *,
    opponents: Sequence[str],
    units: Sequence[Unit],
    k: int,
    seed: int,
    min_net_lift: float = MIN_NET_LIFT,
) -> Derived:
    """The verdict, counts and power of a run from its rows and what it planned (opponents,
    units, k, seed, the practical floor), nothing else: summarize() takes them from here,
    and the gate re-derives a receipt's with this same function (design §14), so the two can
    never disagree on the rule. The rows are taken in plan order, whatever order they come
    in; the verdict counts independent units (design §16, skillbench.verdict)."""
    index = {u.name: i for i, u in enumerate(units)}
    rank = {o: i for i, o in enumerate(opponents)}
    ordered = sorted(
        rows, key=lambda r: (index.get(r.case, len(index)), r.rep, rank.get(r.opponent, len(rank)))
    )
    scored = [r for r in ordered if r.decided_by not in UNSCORED]
    comparisons, power, verdicts = {}, {}, {}
    score = {"win": 1, "loss": -1, "tie": 0}
    for opp in opponents:
        c = comparisons[opp] = compare(scored, opp, min_net_lift)
        verdicts[opp] = c.verdict
        votes = c.units
        need = needed(votes.win, votes.loss)
        power[opp] = Power(
            decided=votes.decided,
            needed=need,
            underpowered=need is None or votes.decided < need,
            sign_p=c.sign_p,
            net_lift_ci=cluster_ci([(score[v], 1) for v in unit_votes(scored, opp).values()], seed),
        )
    return Derived(
        verdict=verdicts[opponents[0]],
        verdicts=verdicts,
        expected_rows=len(units) * k * len(opponents),
        scored_rows=len(scored),
        comparisons=comparisons,
        power=power,
    )


def stats_of(
    plan: Plan,
    sessions: dict[str, SessionRecord],
    power: Power,
    opponent: str,
    skipped: set[str],
) -> Stats:
    """Power (from the rows, by derive()) and pass rates (from the sessions) for the
    candidate against one opponent; the pass rates' intervals resample whole stimuli (a
    suite's sub-cases and every repetition of a case move together)."""
    arms = (CANDIDATE, opponent)
    units = [u for u in plan.units if u.session not in skipped]
    passed = {
        arm: {
            (u.name, rep): arm_result(u, sessions.get(session_key(u.session, arm, rep))).passed
            for u in units
            for rep in range(1, plan.k + 1)
        }
        for arm in arms
    }
    session_of = {u.name: u.session for u in units}

    def by_stimulus(arm: str) -> list[tuple[float, int]]:  # (runs passed, runs) per stimulus
        tally: dict[str, list[int]] = {}
        for (name, _), ok in passed[arm].items():
            counts = tally.setdefault(session_of[name], [0, 0])
            counts[0] += ok
            counts[1] += 1
        return [(ok, n) for _, (ok, n) in sorted(tally.items())]

    at_k = pow_k = None
    if plan.k > 1 and units:
        counts = {
            arm: [sum(passed[arm][(u.name, rep)] for rep in range(1, plan.k + 1)) for u in units]
            for arm in arms
        }
        at_k = {arm: pass_at_k(counts[arm], plan.k) for arm in arms}
        pow_k = {arm: pass_pow_k(counts[arm], plan.k) for arm in arms}
    return Stats(
        **msgspec.structs.asdict(power),
        pass_rate={arm: cluster_ci(by_stimulus(arm), plan.seed) for arm in arms},
        pass_at_k=at_k,
        pass_pow_k=pow_k,
    )
