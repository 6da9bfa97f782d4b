"""Scoring (docs/statistics.md): the units the verdict counts, arm scores, case-runs passed,
efficiency, diagnostics, the noise floor, and the summary and derived verdict of a run.
Pure functions over records."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import msgspec

from skillbench.models import parse_model
from skillbench.results.checks import CheckResult
from skillbench.results.records import (
    AA,
    BASELINE,
    CANDIDATE,
    SUITE,
    Plan,
    RowRecord,
    SessionRecord,
    Unit,
    session_key,
)
from skillbench.results.rows import arm_result, compare, nothing_scored, why
from skillbench.results.sequential import Rule, problem, stimuli_of, stop_of
from skillbench.results.stats import Stats, cluster_ci, needed, pass_at_k, pass_pow_k
from skillbench.results.summary import (
    Derived,
    Diagnostic,
    Efficiency,
    NoiseFloor,
    Power,
    Reuse,
    RowSummary,
    Skipped,
    Summary,
)
from skillbench.results.verdict import INCONCLUSIVE, MIN_NET_LIFT, NONE, UNSCORED, unit_votes


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
        models: dict[str, int] = {}
        for s in ran:
            for name, calls in s.models.items():
                models[name] = models.get(name, 0) + calls
        out[arm] = Efficiency(
            turns=sum(s.turns for s in ran) / n,
            seconds=sum(s.seconds for s in ran) / n,
            cost_usd=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs) / n,
            input_tokens=sum(s.usage.input_tokens + s.usage.cache_read_tokens for s in ran) / n,
            output_tokens=sum(s.usage.output_tokens for s in ran) / n,
            models=models,
        )
    return out


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
        sequential=plan.sequential,
        skipped=skipped_names,
    )
    return Summary(
        stop=found.stop,
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
        complete=incomplete(
            shown,
            units=plan.units,
            k=plan.k,
            opponents=plan.opponents,
            skipped=skipped,
            stopped=stopped,
            sequential=plan.sequential,
        )
        is None,
        not_run=0 if plan.sequential is None else not_run(plan, sessions, skipped_names),
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
        models={
            "agent": plan.model,
            "judge": plan.judge_model,
            **({"grader": plan.grader_model} if plan.grader_model else {}),
        },
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


def incomplete(
    rows: Sequence[RowSummary],
    *,
    units: Sequence[Unit],
    k: int,
    opponents: Sequence[str],
    skipped: Sequence[Skipped],
    stopped: str | None,
    sequential: Rule | None,
) -> str | None:
    """Why a run is not complete, or None when it is: every row that could be measured was
    (a case the image cannot run is not the run's failing; a failed setup, an error, a judge
    failure or a cost stop is), and every repetition its design (or its stopping rule) runs.
    The summary says it, and the gate re-derives it from a receipt's rows, never taking the
    receipt's word."""
    if stopped is not None:
        return f"it was stopped: {stopped}"
    measurable = {s.case for s in skipped if s.environment}
    failed = sorted({s.case for s in skipped} - measurable)
    if failed:
        return f"{failed[0]} was skipped for its setup, not for its image"
    unscored = sum(r.decided_by in UNSCORED for r in rows)
    if unscored:
        return f"{unscored} of its rows are unscored"
    found = problem(
        rows,
        sequential,
        units=[u.name for u in units],
        k=k,
        opponents=opponents,
        skipped=measurable,
    )
    if found is not None:
        return found
    wanted = sum(u.session not in measurable for u in units) * k * len(opponents)
    if sequential is None and len(rows) != wanted:
        return f"it has {len(rows)} rows of the {wanted} its design runs"
    return None


def not_run(plan: Plan, sessions: dict[str, SessionRecord], skipped: set[str]) -> int:
    """Sessions of the full design that a sequential run's stop made unnecessary."""
    planned = sum(name not in skipped for name in plan.sessions) * plan.k * len(plan.arms)
    ran = sum(1 for s in sessions.values() if s.session not in skipped)
    return max(0, planned - ran)


def derive(
    rows: Sequence[RowSummary],
    *,
    opponents: Sequence[str],
    units: Sequence[Unit],
    k: int,
    seed: int,
    min_net_lift: float = MIN_NET_LIFT,
    sequential: Rule | None = None,
    skipped: Collection[str] = (),
) -> Derived:
    """The verdict, counts and power of a run from its rows and what it planned (opponents,
    units, k, seed, the practical floor), nothing else: summarize() takes them from here,
    and the gate re-derives a receipt's with this same function (docs/trust.md), so the two can
    never disagree on the rule. The rows are taken in plan order, whatever order they come
    in; the verdict counts independent units (docs/statistics.md, results/verdict.py). A
    sequential run's verdict against the baseline is its stopping rule's (results/sequential.py)."""
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
    stop = None
    if sequential is not None:
        order = stimuli_of(u.name for u in units)
        # (every row: an unscored repetition still counts as run when a vote is settled)
        stop = stop_of(ordered, sequential, opponents[0], order, len(sequential.looks), k, skipped)
        # a run whose rule has not stopped (cut short by --max-cost, or an early stop that is
        # not one under the gate's floor) has no verdict: its rows are only part of its design
        if stop is not None:
            verdicts[opponents[0]] = stop.verdict
        elif scored:
            verdicts[opponents[0]] = INCONCLUSIVE
    return Derived(
        stop=stop,
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
