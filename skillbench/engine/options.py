"""The options of an eval (`Options`, each field a `skillbench eval` flag) and what the engine
makes of them with the config: the run's settings and its `EvalOptions`. The API (api.py)
and a set run (sets.py) both start from here."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from skillbench.errors import OptionsError
from skillbench.validate import NotASkill

if TYPE_CHECKING:
    from skillbench.config import Settings
    from skillbench.engine.plan import EvalOptions

Log = Callable[[str], None]  # one line for the user: a note, a warning, an image being built


class Options(msgspec.Struct, kw_only=True, frozen=True):
    """How to run an eval or a trigger measurement; each field is the `skillbench eval`
    flag of the same name. A None setting comes from the config, then the default."""

    model: str | None = None  # the arms' model: anthropic/<m>, openai/<m> or scripted/<name>
    judge_model: str | None = None  # the judge's model (default: model)
    grader: str | None = None  # the `expect` checks' grader model (default: the judge model)
    # gradings of each session's expectations (None: 1, or the resumed run's); disagreement
    # fails closed
    grader_runs: int | None = None
    agent: str | None = None  # what runs in the arms: builtin, claude-code or codex
    k: int | None = None  # repetitions of every case (default 1)
    min_net_lift: float | None = None  # the net lift over units PASS/FAIL need (default 0.2)
    sequential: bool | None = None  # stop as soon as the verdict is settled ([stats] sequential)
    parallel: int | None = None  # sessions (and trigger calls) at once, 1 to 64 (default 4)
    team: str | None = None  # a team repo: adds the incumbent arm
    out: str | None = None  # the run folder (default .skillbench/runs/<run_id>/)
    resume: str | None = None  # a run folder to continue; reruns only what is missing
    case: str | None = None  # run this one case (or "suite")
    max_cost: float | None = None  # USD: stop starting sessions once spend passes it
    seed: int | None = None  # the judge's order (default random)
    generate: bool = True  # first write the evals the skill lacks with the model
    triggers: bool = True  # also measure triggers, when the skill has evals/triggers.yaml
    runs: int = 1  # trigger calls per prompt
    threshold: float = 0.5  # the trigger rate that counts as fired, in (0, 1]
    trigger_method: str | None = None  # "catalog" or "agent" (measure_triggers: or "both")
    fresh_baseline: bool = False  # rerun baseline and incumbent sessions, never reuse them
    aa: bool = False  # also run a second baseline arm: the A/A noise floor
    with_library: str | None = None  # a library root: every arm also stages its other skills
    cluster: str | None = None  # a Ray cluster's address: the sessions run there (skillbench[ray])
    evals: list[str] | None = None  # --evals: foreign eval files outside the skill


_SETTINGS = ("model", "judge_model", "k", "parallel", "team", "agent", "min_net_lift")
# what a resumed run keeps
_RESUMED = ("model", "judge_model", "k", "team", "agent", "min_net_lift", "evals")


def settings_for(start: Path, options: Options) -> Settings:
    from skillbench.config import load_settings

    flags = {name: getattr(options, name) for name in _SETTINGS}
    settings = load_settings(start, flags).settings
    if options.sequential is not None:
        settings.stats = msgspec.structs.replace(settings.stats, sequential=options.sequential)
    return settings


def check_options(options: Options) -> None:
    from skillbench.config import MAX_PARALLEL

    if options.runs < 1:
        raise OptionsError("--runs must be at least 1")
    if not 0 < options.threshold <= 1:
        raise OptionsError("--threshold is a trigger rate in (0, 1]")
    if options.parallel is not None and not 1 <= options.parallel <= MAX_PARALLEL:
        raise OptionsError(
            f"--parallel must be between 1 and {MAX_PARALLEL} (each session is a "
            "sandbox; more than the machine can run only queues)"
        )


class _LibraryPath(msgspec.Struct):
    path: str


class _Resumed(msgspec.Struct):
    """The part of plan.json a resumed run's options come from (the rest is checked when the
    run is prepared)."""

    skill_dir: str
    model: str | None = None
    judge_model: str | None = None
    k: int | None = None
    team: str | None = None
    agent: str | None = None
    min_net_lift: float | None = None
    evals: list[str] | None = None
    library: _LibraryPath | None = None


def _resumed(skill: str | None, run_dir: Path, options: Options) -> tuple[str | None, Options]:
    """A resumed run keeps the settings it started with: the plan's skill folder, models,
    repetitions and team, unless an option names one explicitly (and a changed one is
    refused when the run is prepared), and its library arm."""
    from skillbench.util.inputs import load_json

    try:  # bounded and typed: a hostile plan.json is one line naming it
        plan = load_json(run_dir / "plan.json", _Resumed)
    except msgspec.DecodeError as exc:
        raise OptionsError(f"--resume {run_dir}: no readable plan.json there ({exc})") from None
    kept: dict[str, Any] = {
        n: getattr(plan, n)
        for n in _RESUMED
        if getattr(options, n) is None and getattr(plan, n) is not None
    }
    if options.with_library is None and plan.library is not None:
        kept["with_library"] = plan.library.path
    return skill or plan.skill_dir, msgspec.structs.replace(options, **kept)


def eval_options(skill: str | os.PathLike[str] | None, options: Options) -> EvalOptions:
    """The engine's options for a run of `skill` under `options` and the config."""
    from skillbench.engine.plan import EvalOptions

    skill_dir = None if skill is None else os.fspath(skill)
    if options.resume:
        skill_dir, options = _resumed(skill_dir, Path(options.resume), options)
    if skill_dir is None:
        raise OptionsError("eval needs a SKILL folder (or --resume RUN_DIR)")
    check_options(options)
    settings = settings_for(Path(skill_dir), options)
    if options.max_cost is not None and options.max_cost < 0:
        raise OptionsError("--max-cost is a spend cap in USD: 0 or more")
    if options.evals and (options.cluster or settings.cluster.address):
        raise OptionsError(
            "--evals runs on this machine only: the cluster's workers read the skill"
        )
    return EvalOptions(
        skill_dir=skill_dir,
        settings=settings,
        out=options.out,
        resume=options.resume,
        case=options.case,
        max_cost=options.max_cost,
        grader=options.grader,
        grader_runs=options.grader_runs,
        seed=options.seed,
        triggers=options.triggers,
        runs=options.runs,
        threshold=options.threshold,
        team=settings.team,
        trigger_method=options.trigger_method,
        fresh_baseline=options.fresh_baseline,
        aa=options.aa,
        library=options.with_library,
        evals=[os.path.abspath(e) for e in options.evals or ()],
    )


def generate_for(
    skill_dir: Path,
    settings: Settings,
    kinds: Sequence[str],
    log: Log,
    only_missing: bool,
    ceiling: float | None = None,
) -> float:
    from skillbench.engine.gen import generate_missing
    from skillbench.evals.skills import is_skill

    if not is_skill(skill_dir):
        raise NotASkill(f"{skill_dir}: not a skill folder (no SKILL.md)")
    return generate_missing(
        skill_dir, settings, kinds, log, only_missing=only_missing, ceiling=ceiling
    )
