"""Cost before spending (docs/statistics.md): what a run would do and roughly cost, with no model
called and no sandbox started but the probe of cases with `requires`.

Sessions are counted as they will run (docs/statistics.md): cases x arms x k, less the cases whose
image lacks a `requires` tool (probed as the run would) and the baseline and incumbent
sessions the reuse cache already holds. Per-session turns, tokens and seconds come from the
newest earlier receipt of the same skill with the same agent and model; without one, from
stated defaults. The cost is those tokens at the price table's rates.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from skillbench.agents import AgentError, make_agent
from skillbench.config import sandbox_spec
from skillbench.engine.plan import (
    EvalError,
    EvalOptions,
    case_spec,
    find_incumbent,
    library_of,
    probe_requires,
    sessions_of,
    trigger_method,
    units_of,
    validated,
)
from skillbench.engine.reuse import SessionCache, arm_identity, cache_key, session_inputs
from skillbench.engine.simulate import expected_sessions
from skillbench.evals.model import Check, Session, Suite
from skillbench.evals.skills import digest
from skillbench.grading.judge import family_warning
from skillbench.models import endpoint
from skillbench.models.base import Usage
from skillbench.models.pricing import cost_usd
from skillbench.results.records import AA, BASELINE, CANDIDATE, INCUMBENT
from skillbench.sandbox import images_of, make_provider
from skillbench.sandbox.base import SandboxError, SandboxSpec
from skillbench.team.receipts import local_receipts

# Without an earlier receipt: per model call in a session, and per session.
DEFAULT_CALLS = 6.0
DEFAULT_INPUT, DEFAULT_OUTPUT = 12_000.0, 600.0  # tokens per call
DEFAULT_SECONDS = 90.0
JUDGE_INPUT, JUDGE_OUTPUT = 6_000.0, 200.0  # tokens per judge call (one order)
# tokens per `expect` grading call: the transcript tail and the workspace files (capped)
GRADER_INPUT, GRADER_OUTPUT = 9_000.0, 400.0
TRIGGER_INPUT, TRIGGER_OUTPUT = 800.0, 30.0  # tokens per catalog call
PLAN_LIFTS = (0.0, 0.4)  # true net lifts --plan shows a sequential run's expected cost at
ROUTING_CALLS = 2  # an agent routing session: load the skill, answer


class Estimate(msgspec.Struct, kw_only=True):
    skill: str
    version: str
    cases: int  # that will run
    arms: list[str]
    k: int
    sessions: int  # that will run
    reused: int  # baseline and incumbent sessions the cache holds
    skipped: dict[str, str] = {}  # case -> why it will not run (its image lacks a tool)
    unprobed: str | None = None  # why some cases' `requires` could not be probed
    judge_warning: str | None = None  # judge and agent share a model family
    session_calls: float
    judge_calls: int  # at most: only check ties go to the judge, in both orders
    grader_calls: int = 0  # `expect` gradings: one per graded unit, arm, rep and --grader-runs
    trigger_calls: int
    trigger_method: str | None  # None: no triggers file, or --execution-only
    cost_usd: float | None  # None: the model has no known price
    seconds: float
    parallel: int  # the sessions at once the time assumes
    basis: str  # where the per-session figures came from
    # per true net lift ("0.0", "0.4"): the sessions a sequential run is expected to spend,
    # as a share of the fixed design's (simulated through its stopping rule); its worst case
    # is the fixed design's (share 1)
    sequential: dict[str, float] = {}
    sequential_on: bool = False  # --sequential / [stats] sequential: the run will use it


def estimate(opts: EvalOptions) -> Estimate:
    """The plan of a run like `opts` and its estimated calls, cost and time."""
    skill_dir = Path(opts.skill_dir)
    skill, assets = validated(skill_dir, opts.evals)
    settings = opts.settings
    try:
        agent = make_agent(settings.agent, **settings.agents.get(settings.agent, {}))
        agent.check_model(settings.model)
    except AgentError as exc:
        raise EvalError(f"--agent {settings.agent}: {exc}") from None
    version = digest(skill_dir)
    sessions = sessions_of(assets, opts.case)
    found = find_incumbent(opts, skill, version)
    library = library_of(opts, skill)
    arms = [BASELINE, CANDIDATE] + ([INCUMBENT] if found else []) + ([AA] if opts.aa else [])
    box = sandbox_spec(settings, agent.image_name(opts.image))
    variants = {
        n: images_of(settings.sandbox.provider).variant_for(opts.image, s.requires)
        for n, s in sessions.items()
    }
    images = {n: agent.image_name(v) for n, v in variants.items() if v is not None}
    skipped, unprobed = _requires(sessions, box, images)
    sessions = {n: s for n, s in sessions.items() if n not in skipped}
    cache = SessionCache()
    reused = 0
    if not opts.fresh_baseline:
        for name, spec in sessions.items():
            for arm in (a for a in arms if a != CANDIDATE):
                for rep in range(1, settings.k + 1):
                    key = cache_key(
                        session_inputs(
                            spec,
                            skill_dir,
                            arm=arm_identity(
                                arm,
                                found.digest if found else None,
                                library.digest if library else None,
                            ),
                            agent=agent.name,
                            agent_version=agent.version(),
                            agent_options=settings.agents.get(agent.name, {}),
                            model=settings.model,
                            endpoint=endpoint(settings.model).url,
                            sandbox=case_spec(box, spec, images.get(name), settings.max_memory),
                            rep=rep,
                        )
                    )
                    reused += cache.get(key) is not None
    to_run = len(sessions) * len(arms) * settings.k - reused
    calls, tokens_in, tokens_out, seconds, basis = _per_session(
        skill.name, settings.model, settings.agent
    )
    judged = sum(u.judge for u in units_of(sessions))
    judge_calls = judged * settings.k * len([a for a in arms if a not in (CANDIDATE, AA)]) * 2
    graded = sum(_graded_units(s) for s in sessions.values())
    # a reused session's checks run again, so it is graded again too
    grader_calls = graded * len(arms) * settings.k * (opts.grader_runs or 1)
    method, trigger_calls = None, 0
    if opts.triggers and assets.triggers is not None:
        method = trigger_method(opts)
        prompts = len(assets.triggers.should_trigger) + len(assets.triggers.should_not_trigger)
        trigger_calls = prompts * opts.runs
        if method == "agent":  # one session per prompt and run, plus the canary
            trigger_calls = (trigger_calls + 1) * ROUTING_CALLS
    usage = Usage(
        input_tokens=int(
            to_run * tokens_in
            + judge_calls * JUDGE_INPUT
            + grader_calls * GRADER_INPUT
            + trigger_calls * TRIGGER_INPUT
        ),
        output_tokens=int(
            to_run * tokens_out
            + judge_calls * JUDGE_OUTPUT
            + grader_calls * GRADER_OUTPUT
            + trigger_calls * TRIGGER_OUTPUT
        ),
    )
    parallel = max(1, settings.parallel)
    wall = math.ceil(to_run / parallel) * seconds + math.ceil(trigger_calls / parallel) * 5.0
    return Estimate(
        skill=skill.name,
        version=version,
        skipped=skipped,
        unprobed=unprobed,
        judge_warning=family_warning(settings.model, settings.judge_model or settings.model),
        cases=len(sessions),
        arms=arms,
        k=settings.k,
        sessions=to_run,
        reused=reused,
        session_calls=to_run * calls,
        judge_calls=judge_calls,
        grader_calls=grader_calls,
        trigger_calls=trigger_calls,
        trigger_method=method,
        cost_usd=cost_usd(settings.model, usage, settings.prices),
        seconds=wall,
        parallel=settings.parallel,
        basis=basis,
        sequential={
            f"{lift}": expected_sessions(len(sessions), settings.k, lift) for lift in PLAN_LIFTS
        }
        if sessions
        else {},
        sequential_on=settings.stats.sequential,
    )


def _requires(
    sessions: dict[str, Session], box: SandboxSpec, variants: dict[str, str]
) -> tuple[dict[str, str], str | None]:
    """The cases whose image lacks a `requires` tool (case -> why), probed the way the run
    probes them (in the variant of the sandbox image a case runs in, `variants`, if any),
    and why some could not be probed (their image is not built yet, or podman is not
    there): those are counted as if they will run."""
    wanted, later = {}, 0
    for name, spec in sessions.items():
        if not spec.requires:
            continue
        image = variants.get(name, box.image)
        if spec.image is None and spec.containerfile is None and images_of().exists(image):
            wanted[name] = (image, spec.requires)
        else:  # its own image (or the agent's) is built when the run starts
            later += 1
    skipped: dict[str, str] = {}
    note = (
        f"{later} case(s) with `requires` not probed: the run builds their image" if later else None
    )
    if wanted:
        try:
            missing = asyncio.run(_probe(box, wanted))
        except SandboxError as exc:
            return {}, f"`requires` not probed ({exc}): every case counted as if it runs"
        skipped = {name: f"missing {', '.join(tools)}" for name, tools in missing.items()}
    return skipped, note


async def _probe(
    box: SandboxSpec, wanted: dict[str, tuple[str, tuple[str, ...]]]
) -> dict[str, list[str]]:
    provider = make_provider()
    try:
        return await probe_requires(provider, box, wanted)
    finally:
        await provider.aclose()


def _per_session(skill: str, model: str, agent: str) -> tuple[float, float, float, float, str]:
    """(model calls, input tokens, output tokens, seconds) per session, and their source."""
    earlier = [
        r
        for _, r in local_receipts(skill)
        if r.models.get("agent") == model and (r.agent or "builtin") == agent and r.efficiency
    ]
    if earlier:
        r = max(earlier, key=lambda r: (r.provenance.created_at, r.run_id))
        # (an older schema's receipt counts too: its efficiency read as JSON, as this one's)
        arms: list[dict[str, Any]] = msgspec.to_builtins(list(r.efficiency.values()))

        def mean(key: str) -> float:
            return sum(float(e.get(key) or 0.0) for e in arms) / len(arms)

        turns = max(1.0, mean("turns"))
        return (
            turns,
            mean("input_tokens"),
            mean("output_tokens"),
            mean("seconds"),
            f"per-session figures from run {r.run_id} of {skill}",
        )
    return (
        DEFAULT_CALLS,
        DEFAULT_CALLS * DEFAULT_INPUT,
        DEFAULT_CALLS * DEFAULT_OUTPUT,
        DEFAULT_SECONDS,
        f"no earlier run of {skill} with {model}: a default of "
        f"{DEFAULT_CALLS:g} calls x {DEFAULT_INPUT:,.0f} input + {DEFAULT_OUTPUT:,.0f} output "
        f"tokens and {DEFAULT_SECONDS:g} s per session",
    )


def plan_lines(e: Estimate, max_cost: float | None) -> list[str]:
    """The `eval --plan` report."""
    arms = ", ".join(e.arms)
    lines = [
        f"plan: {e.skill} ({e.version[:19]}…): {e.cases} case(s) x {len(e.arms)} arms "
        f"({arms}) x k={e.k}"
    ]
    reused = f" ({e.reused} baseline/incumbent session(s) reused from earlier runs)" * bool(
        e.reused
    )
    lines.append(f"  sessions: {e.sessions} to run{reused}")
    for case, why in e.skipped.items():
        lines.append(f"  skipped (environment): {case} — {why}")
    if e.unprobed:
        lines.append(f"  note: {e.unprobed}")
    triggers = ""
    if e.trigger_method:
        method = "catalog call" if e.trigger_method == "catalog" else "agent routing"
        triggers = f", {e.trigger_calls} trigger call(s) ({method})"
    lines.append(
        f"  model calls: ~{e.session_calls:.0f} in sessions, up to {e.judge_calls} "
        f"judge call(s){triggers}"
        + (f", {e.grader_calls} grader call(s)" if e.grader_calls else "")
    )
    cost = (
        "unknown (no price for the model: add [prices] to skillbench.toml)"
        if (e.cost_usd is None)
        else f"~${e.cost_usd:.2f}"
    )
    lines.append(f"  estimated cost: {cost}; {e.basis}")
    lines.append(f"  estimated time: ~{_duration(e.seconds)} at --parallel {e.parallel}")
    over = over_budget(e, max_cost)
    if over:
        lines.append(f"  {over}")
    lines.extend(design_lines(e))
    if e.judge_warning and e.judge_calls:
        lines.append(f"  judge: {e.judge_warning}")
    return lines


def design_lines(e: Estimate) -> list[str]:
    """The fixed and the sequential design side by side: expected and worst-case sessions
    and cost (the fixed design's worst case is its expectation)."""
    if not e.sequential:
        return []
    cost = e.cost_usd

    def spend(share: float) -> str:
        sessions = f"{e.sessions * share:.0f} sessions"
        return sessions if cost is None else f"{sessions} ~${cost * share:.2f}"

    chosen = ("sequential", "fixed") if e.sequential_on else ("fixed", "sequential")
    lines = []
    for design in chosen:
        tag = " (this run)" if design == chosen[0] else ""
        if design == "fixed":
            lines.append(f"  fixed design{tag}: {spend(1.0)}, expected and worst case")
        else:
            expected = " · ".join(
                f"{spend(share)} at net lift {lift}" for lift, share in e.sequential.items()
            )
            lines.append(f"  sequential design{tag}: expected {expected}; worst case {spend(1.0)}")
    return lines


def over_budget(e: Estimate, max_cost: float | None) -> str | None:
    """The warning when the estimate exceeds --max-cost."""
    if max_cost is None or e.cost_usd is None or e.cost_usd <= max_cost:
        return None
    return (
        f"the estimated cost ~${e.cost_usd:.2f} exceeds --max-cost ${max_cost:.2f}: the run "
        "will stop at the cap with some rows unscored"
    )


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _graded_units(spec: Session) -> int:
    """The units of a session with an `expect` check: each is one grading call per arm."""

    def expects(checks: Sequence[Check]) -> bool:
        return any(c.kind == "expect" for c in checks)

    if isinstance(spec, Suite):
        return sum(expects((*spec.checks, *sub.checks)) for sub in spec.cases)
    return int(expects(spec.checks))
