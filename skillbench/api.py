"""The Python API: what `skillbench eval`, `triggers`, `gen` and `gate` do, without the CLI.

    import skillbench

    result = skillbench.evaluate("skills/pdf", options=skillbench.Options(k=3))
    print(result.summary.verdict, result.run_dir)
    run = skillbench.read_run(result.run_dir)    # any finished run folder, typed

In a running event loop (a notebook, an async application) await the `_async` variants
(`evaluate_async`, `evaluate_triggers_async`, `measure_triggers_async`, `run_oracles_async`);
the plain ones work there too, on a thread of their own.

Each function loads the settings the CLI would (skillbench.toml or [tool.skillbench] nearest
the skill, SKILLBENCH_MODEL, the defaults) and lays the options over them, the way flags are.
They raise only `skillbench.errors.SkillbenchError`s; the CLI is a shell over them that parses
flags into `Options`, calls one function, renders its result and maps the error to an exit
code. Messages name the CLI flag of an option (`--max-cost`), the same spelling as the field.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import os
import signal
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from skillbench.engine.options import (
    Log,
    Options,
    check_options,
    eval_options,
    generate_for,
    settings_for,
)
from skillbench.errors import EvalError, Interrupted, OptionsError
from skillbench.validate import NotASkill

if TYPE_CHECKING:
    from skillbench.config import Settings
    from skillbench.engine.estimate import Estimate
    from skillbench.engine.oracle import OracleResult
    from skillbench.engine.plan import EvalOptions
    from skillbench.engine.run import EvalResult
    from skillbench.engine.session import Progress
    from skillbench.engine.sets import SetPlan, SetResult
    from skillbench.engine.triggers import TriggerReport
    from skillbench.models.ledger import RunLedger
    from skillbench.results.records import SessionRecord
    from skillbench.results.run_folder import RunFolder
    from skillbench.results.set_folder import SetFolder
    from skillbench.team.gate import GateResult

T = TypeVar("T")


def _quiet(line: str) -> None:
    pass


class GateOptions(msgspec.Struct, kw_only=True, frozen=True):
    """The team repo and the policy fields that override its [gate] table (None: keep)."""

    team: str | None = None
    require: str | None = None  # the weakest verdict allowed: PASS or NEUTRAL
    min_recall: float | None = None
    min_precision: float | None = None
    allow_incumbent_fail: bool | None = None
    allow_partial: bool | None = None  # accept a run that did not score every row
    require_power: bool | None = None  # refuse a verdict the sign test cannot support
    allow_inconclusive: bool | None = None  # accept INCONCLUSIVE (fewer than 5 decided units)
    trigger_method: str | None = None  # accept trigger numbers only from this method
    require_signed: bool | None = None  # only receipts signed by an allowed signer
    allow_endpoints: list[str] | None = None  # the model endpoints accepted (replaces default)
    require_cells: list[str] | None = None  # agent/model patterns that must each pass
    allow_neutral_cells: bool | None = None  # with require PASS: a NEUTRAL cell beside a PASS
    allow_custom_ca: bool | None = None  # accept runs that trusted a non-system CA
    # where the policy, allowed_signers and undeletable receipts come from: a revision of the
    # team repo, or the merge base of HEAD with a base branch (GITHUB_BASE_REF in CI)
    policy_from: str | None = None
    base: str | None = None


DEFAULTS = Options()  # the frozen defaults every function starts from
NO_OVERRIDES = GateOptions()  # the policy exactly as the team repo and the config say


def _before_run(opts: EvalOptions, options: Options, kinds: list[str], log: Log) -> None:
    """What a run does before its sessions: warn when --parallel sessions would not fit in
    this machine's memory; for a new run, also warn when the estimate passes --max-cost, and
    write the evals of `kinds` the skill lacks (counting their cost toward the cap)."""
    from skillbench.sandbox import capacity

    if not (options.cluster or opts.settings.cluster.address):  # else they run on the workers
        settings = opts.settings
        memory = capacity.parallel_warning(
            settings.agent, settings.parallel, capacity.mem_available()
        )
        if memory:
            log(f"warning: {memory}")
    for line in capped_timeouts(opts):
        log(f"note: {line}")
    if options.resume:
        return
    if options.max_cost is not None:
        from skillbench.engine.estimate import estimate as estimated
        from skillbench.engine.estimate import over_budget

        planned = estimated(opts)
        opts.planned_usd = planned.cost_usd
        warning = over_budget(planned, options.max_cost)
        if warning:
            log(f"note: {warning}")
    if opts.evals:  # the cases come from --evals: only triggers may be missing
        kinds = [k for k in kinds if k != "cases"]
    if options.generate and kinds:
        opts.spent_before = generate_for(
            Path(opts.skill_dir), opts.settings, kinds, log, True, options.max_cost
        )


def capped_timeouts(opts: EvalOptions) -> list[str]:
    """Each case whose `timeout_minutes` passes the run's `max_timeout`, with its file."""
    from skillbench.engine.plan import validated
    from skillbench.evals.model import timeout_note

    try:
        _, assets = validated(Path(opts.skill_dir), opts.evals)
    except Exception:  # (the run itself reports a broken suite, with its line)
        return []
    cap = opts.settings.max_timeout
    return [
        f"{case.path}: {timeout_note(case.timeout_minutes, cap)}"
        for case in assets.cases
        if case.timeout_minutes > cap
    ]


def _off_loop(call: Callable[[], T]) -> T | None:
    """Inside a running event loop (a notebook, an async app) `asyncio.run` is refused, and the
    sync API calls it (generation and image builds too): there the whole call runs on a thread
    of its own, and this returns its result. None: no loop runs here, call on this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="skillbench") as pool:
        return pool.submit(call).result()


def _start_eval(
    skill: str | os.PathLike[str] | None, options: Options, progress: Progress | None, log: Log
) -> tuple[Coroutine[Any, Any, EvalResult], Path, Any]:
    """Everything of an eval before its first session (options, generation, the plan, the
    cluster), and the run itself as a coroutine not yet started."""
    from skillbench.engine.plan import prepare
    from skillbench.engine.run import execute
    from skillbench.models import parse_model

    opts = eval_options(skill, options)
    _before_run(opts, options, ["cases", "triggers"] if options.triggers else ["cases"], log)
    prepared = prepare(opts, log=log)
    if parse_model(opts.settings.model).scripted:
        log(
            f"note: using the scripted driver ({opts.settings.model}): a fixed script, not a "
            "model; the verdict shows the pipeline works, not that the skill helps"
        )
    run_dir = prepared[1]
    cluster = _open_cluster(options.cluster or opts.settings.cluster.address, opts, log)
    return execute(prepared, opts, progress or _Silent(), cluster), run_dir, cluster


def _run_stoppable(
    work: Coroutine[Any, Any, T],
    folder: Path,
    on_second_signal: Callable[[Interrupted], None] | None,
) -> T:
    """Run `work` to its end; Ctrl-C stops it as Interrupted naming `folder`. Given
    `on_second_signal`, under the two-signal rule (engine/interrupt.py): SIGTERM stops it too,
    and a second signal exits the process at once after removing every sandbox."""
    from skillbench.engine.interrupt import Stop

    stop = None
    if on_second_signal is not None:
        say = on_second_signal
        stop = Stop(lambda signum: say(Interrupted(str(folder), signum=signum)))
    try:
        return asyncio.run(work if stop is None else stop.run(work))
    except (KeyboardInterrupt, asyncio.CancelledError):
        first = stop.signals[0] if stop is not None and stop.signals else signal.SIGINT
        raise Interrupted(str(folder), signum=first) from None
    except OSError as exc:
        raise _write_failure(exc, folder) from None


def _write_failure(exc: OSError, run_dir: Path) -> EvalError:
    """The one line for an OSError that stopped a run: the run folder could not be written (a
    full disk, most often), or the podman client's HTTP error."""
    if exc.errno is None and exc.filename is None:
        return EvalError(
            f"the sandbox service failed: {str(exc)[:300]}; nothing finished is lost: "
            f"`skillbench doctor` says what to fix, then: skillbench eval --resume {run_dir}"
        )
    full = exc.errno == errno.ENOSPC
    return EvalError(
        f"writing the run folder {run_dir} failed: "
        f"{exc.strerror or exc}{' (the disk is full)' if full else ''}; nothing finished "
        f"is lost: {'free some space' if full else 'fix that'}, then continue with: "
        f"skillbench eval --resume {run_dir}"
    )


def _close_cluster(cluster: Any, log: Log) -> None:
    if cluster is not None:
        cluster.close()
        for node, count in cluster.lost.items():
            log(f"cluster: {node} dropped out mid-run; its {count} session(s) were retried")


def evaluate(
    skill: str | os.PathLike[str] | None,
    *,
    options: Options = DEFAULTS,
    progress: Progress | None = None,
    log: Log = _quiet,
    on_second_signal: Callable[[Interrupted], None] | None = None,
) -> EvalResult:
    """The paired-arm eval of `skill` (None with `options.resume`): generate what the skill
    lacks, plan, run every session, score, judge, measure triggers, and write the run
    folder with its summary.json and receipt. `progress` hears of every session. Raises
    Interrupted when Ctrl-C stops the run. Given `on_second_signal` (for a CLI or a CI job:
    it installs signal handlers), SIGTERM stops it the same way, and a second signal exits
    the process at once, after removing every sandbox, calling `on_second_signal` with the
    Interrupted of the first to say its line. Inside a running event loop, await
    `evaluate_async` instead (this works there too, on a thread of its own)."""
    done = _off_loop(lambda: evaluate(skill, options=options, progress=progress, log=log))
    if done is not None:
        return done
    work, run_dir, cluster = _start_eval(skill, options, progress, log)
    try:
        return _run_stoppable(work, run_dir, on_second_signal)
    finally:
        _close_cluster(cluster, log)


async def evaluate_async(
    skill: str | os.PathLike[str] | None,
    *,
    options: Options = DEFAULTS,
    progress: Progress | None = None,
    log: Log = _quiet,
) -> EvalResult:
    """`evaluate` for a running event loop (a notebook, an async application). Cancelling
    the task stops the run as Ctrl-C does: every sandbox is removed, nothing finished is
    lost, and `Options(resume=run_dir)` goes on."""
    # what comes before the first session is synchronous (generation, image builds)
    work, run_dir, cluster = await asyncio.to_thread(_start_eval, skill, options, progress, log)
    try:
        return await work
    except OSError as exc:
        raise _write_failure(exc, run_dir) from None
    finally:
        _close_cluster(cluster, log)


def evaluate_set(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    agents: Sequence[str] = (),
    models: Sequence[str] = (),
    only: Sequence[str] = (),
    changed_since: str | None = None,
    options: Options = DEFAULTS,
    progress: Progress | None = None,
    log: Log = _quiet,
    on_second_signal: Callable[[Interrupted], None] | None = None,
) -> SetResult:
    """A set run (docs/results.md, "Set runs"): every skill of `paths` (skills and library
    roots; `only` keeps those names, `changed_since` those whose digest or evals changed
    since that git revision) × `agents` × `models` (default: the config's [matrix], else its
    agent and model), each cell one complete paired eval in its own run folder under the set
    folder's `cells/`, every cell's sessions in one `--parallel` pool and one `--max-cost`
    ledger. A cell whose agent cannot use its model is refused before anything runs;
    `options.resume` (a set folder) finishes the set. Signals and loops as `evaluate`."""
    from skillbench.engine.sets import start_set

    done = _off_loop(
        lambda: evaluate_set(
            paths,
            agents=agents,
            models=models,
            only=only,
            changed_since=changed_since,
            options=options,
            progress=progress,
            log=log,
        )
    )
    if done is not None:
        return done
    work, set_dir = start_set(
        paths,
        agents=agents,
        models=models,
        only=only,
        changed_since=changed_since,
        options=options,
        progress=progress or _Silent(),
        log=log,
    )
    return _run_stoppable(work, set_dir, on_second_signal)


def estimate_set(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    agents: Sequence[str] = (),
    models: Sequence[str] = (),
    only: Sequence[str] = (),
    changed_since: str | None = None,
    options: Options = DEFAULTS,
    log: Log = _quiet,
) -> SetPlan:
    """What `evaluate_set` would do (`eval --plan` of a set): each cell's sessions, cost and
    time, and the set's; nothing is started."""
    from skillbench.engine.sets import estimate_set as estimated

    return estimated(
        paths,
        agents=agents,
        models=models,
        only=only,
        changed_since=changed_since,
        options=options,
        log=log,
    )


async def evaluate_set_async(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    agents: Sequence[str] = (),
    models: Sequence[str] = (),
    only: Sequence[str] = (),
    changed_since: str | None = None,
    options: Options = DEFAULTS,
    progress: Progress | None = None,
    log: Log = _quiet,
) -> SetResult:
    """`evaluate_set` for a running event loop; cancelling it stops the set as Ctrl-C does."""
    from skillbench.engine.sets import start_set

    work, set_dir = await asyncio.to_thread(
        lambda: start_set(
            paths,
            agents=agents,
            models=models,
            only=only,
            changed_since=changed_since,
            options=options,
            progress=progress or _Silent(),
            log=log,
        )
    )
    try:
        return await work
    except OSError as exc:
        raise _write_failure(exc, set_dir) from None


def read_run(path: str | os.PathLike[str]) -> RunFolder:
    """A finished run folder read back, typed: its plan, summary, session and row records,
    and each session's transcript (`RunFolder.transcript(record)`). What `report`, `view` and
    `compare` read; a folder that is not a finished run raises a RunFolderError saying why."""
    from skillbench.results.run_folder import load_run

    return load_run(Path(path))


def read_set(path: str | os.PathLike[str]) -> SetFolder:
    """A set run folder (a library and/or an agents × models matrix) read back, typed: each
    cell of its set.json with the cell's run folder read as `read_run` reads one (`run` is None,
    and `problem` says why, for a cell that was refused, failed or did not finish). What
    `report SETDIR` renders; a folder without a readable set.json raises a CellSetError."""
    from skillbench.results.set_folder import load_set

    return load_set(Path(path))


def _open_cluster(address: str | None, opts: EvalOptions, log: Log) -> Any:
    """The cluster the sessions are placed on (None: this machine), its nodes prepared.
    Ray is imported only here, and only when a cluster is asked for."""
    if not address:
        return None
    from skillbench.broker.server import allowed_models
    from skillbench.cluster import ClusterError, open_cluster

    try:
        settings = opts.settings
        secondary = settings.agents.get(settings.agent, {}).get("secondary_model")
        relay = {
            "models": allowed_models(settings.model, secondary),
            "prices": settings.prices,
            "budget": opts.max_cost,
        }
        return open_cluster(address, [opts.image, *opts.case_images.values()], log, relay)
    except ClusterError as exc:
        raise OptionsError(str(exc)) from None


class _Silent:
    def planned(self, total: int, done: int) -> None:
        pass

    def started(self, key: str) -> None:
        pass

    def finished(self, record: SessionRecord, spend: float) -> None:
        pass


def estimate(skill: str | os.PathLike[str] | None, *, options: Options = DEFAULTS) -> Estimate:
    """What `evaluate` would do (`eval --plan`): sessions, model calls, cost and time;
    nothing is started."""
    from skillbench.engine.estimate import estimate as estimated

    return estimated(eval_options(skill, options))


def run_oracles(
    skill: str | os.PathLike[str] | None, *, options: Options = DEFAULTS, log: Log = _quiet
) -> list[OracleResult]:
    """Every case's reference solution (`oracle:`) run against its checks (`eval --oracle`);
    no model is called and nothing is generated."""
    done = _off_loop(lambda: run_oracles(skill, options=options, log=log))
    return (
        done
        if done is not None
        else asyncio.run(run_oracles_async(skill, options=options, log=log))
    )


async def run_oracles_async(
    skill: str | os.PathLike[str] | None, *, options: Options = DEFAULTS, log: Log = _quiet
) -> list[OracleResult]:
    """`run_oracles` for a running event loop."""
    from skillbench.engine.oracle import oracle_run

    return await oracle_run(await asyncio.to_thread(eval_options, skill, options), log=log)


def evaluate_triggers(
    skill: str | os.PathLike[str] | None, *, options: Options = DEFAULTS, log: Log = _quiet
) -> TriggerReport:
    """The trigger measurement of an eval alone (`eval --triggers-only`): the skill and its
    evals validated, a missing triggers file generated, no sandboxes for the cases."""
    done = _off_loop(lambda: evaluate_triggers(skill, options=options, log=log))
    if done is not None:
        return done
    return asyncio.run(evaluate_triggers_async(skill, options=options, log=log))


async def evaluate_triggers_async(
    skill: str | os.PathLike[str] | None, *, options: Options = DEFAULTS, log: Log = _quiet
) -> TriggerReport:
    """`evaluate_triggers` for a running event loop."""
    from skillbench.engine.run import triggers_only

    def prepared() -> EvalOptions:
        opts = eval_options(skill, options)
        _before_run(opts, options, ["triggers"], log)
        return opts

    return await triggers_only(await asyncio.to_thread(prepared))


def generate_evals(
    skill: str | os.PathLike[str],
    *,
    kinds: Sequence[str] = ("cases", "triggers"),
    options: Options = DEFAULTS,
    log: Log = _quiet,
) -> float:
    """Write evals of `kinds` with the model (`skillbench gen`); an existing file is never
    replaced. Returns what the calls cost in USD."""
    skill_dir = Path(skill)
    return generate_for(skill_dir, settings_for(skill_dir, options), kinds, log, False)


def measure_triggers(
    path: str | os.PathLike[str], *, options: Options = DEFAULTS, log: Log = _quiet
) -> dict[str, list[TriggerReport]]:
    """`measure_triggers_async` from synchronous code (`skillbench triggers`)."""
    done = _off_loop(lambda: measure_triggers(path, options=options, log=log))
    if done is not None:
        return done
    return asyncio.run(measure_triggers_async(path, options=options, log=log))


async def measure_triggers_async(
    path: str | os.PathLike[str], *, options: Options = DEFAULTS, log: Log = _quiet
) -> dict[str, list[TriggerReport]]:
    """Trigger recall and precision of a skill, or of every skill of a library root with an
    evals/triggers.yaml (`skillbench triggers`), by method: "catalog" (default without an
    agent), "agent" (default with one) or "both", concurrently. One report per skill each."""
    from skillbench.engine.routing import RoutingError, measure
    from skillbench.engine.triggers import targets_at
    from skillbench.validate import skills_at

    root = Path(path)
    skills_at(root)
    targets = targets_at(root)
    if not targets:
        raise EvalError(
            f"{root}: no skill there has a trigger file (evals/triggers.yaml or a trigger JSON)"
        )
    check_options(options)
    settings = settings_for(root, options)
    method = options.trigger_method or ("agent" if options.agent else "catalog")
    methods = ["catalog", "agent"] if method == "both" else [method]
    ledger = _trigger_ledger(settings, options.max_cost)

    try:
        reports = list(
            await asyncio.gather(
                *(
                    measure(
                        settings,
                        targets,
                        method=m,
                        agent=settings.agent,
                        runs=options.runs,
                        threshold=options.threshold,
                        log=log,
                        ledger=ledger,
                    )
                    for m in methods
                )
            )
        )
    except RoutingError as exc:
        raise EvalError(str(exc)) from None
    if ledger is not None:
        log(_trigger_spend(ledger, [r for rs in reports for r in rs]))
    return dict(zip(methods, reports, strict=True))


def _trigger_ledger(settings: Settings, max_cost: float | None) -> RunLedger | None:
    """The measurement's one ledger under --max-cost (catalog calls and routing sessions of
    every method spend in it), or None without a cap."""
    from skillbench.models.ledger import RunLedger
    from skillbench.models.pricing import price_for

    if max_cost is None:
        return None
    if max_cost < 0:
        raise OptionsError("--max-cost is a spend cap in USD: 0 or more")
    if price_for(settings.model, settings.prices) is None:
        raise OptionsError(
            f"--max-cost: no price is known for {settings.model}, so its spend cannot be "
            f'counted; add [prices."{settings.model}"] with input and output (USD per million '
            "tokens) to skillbench.toml"
        )
    return RunLedger(max_cost)


def _trigger_spend(ledger: RunLedger, reports: list[TriggerReport]) -> str:
    """The line that says what the cap let run: spend against it and the prompts not run."""
    from skillbench.engine.triggers import CAPPED

    state = ledger.snapshot()
    capped = sum(r.error == CAPPED for report in reports for r in report.results)
    head = f"spent ${state.spent:.4f} of --max-cost ${ledger.ceiling or 0:.2f}"
    if not capped:
        return head
    return (
        f"{head}: the cap was reached; {capped} prompt(s) not run (shown as errored: a "
        "should-trigger one counts as a miss, as any failed call, never as a false fire)"
    )


def gate(skill: str | os.PathLike[str], *, options: GateOptions = NO_OVERRIDES) -> GateResult:
    """Does the newest receipt that measured the skill's exact bytes meet the policy
    (`skillbench gate`)? Policy: the team repo's, then the local config's [gate], then
    `options`."""
    from skillbench.config import load_settings
    from skillbench.evals.skills import is_skill
    from skillbench.team.anchors import trusted_revision
    from skillbench.team.gate import GateResult, load_policy, versions_to_gate
    from skillbench.team.gate import gate as gated
    from skillbench.team.repo import TeamError

    skill_dir = Path(skill)
    if not is_skill(skill_dir):
        raise NotASkill(f"{skill_dir}: not a skill folder (no SKILL.md)")
    loaded = load_settings(skill_dir, {"team": options.team})
    settings = loaded.settings
    team = Path(settings.team) if settings.team else None
    flags = msgspec.structs.asdict(options)
    for key in ("team", "policy_from", "base"):
        del flags[key]
    rev = trusted_revision(team, options.policy_from, options.base)
    # the local config's gate table sits between the team repo's policy and the options
    # (only where stricter, from a file whose folder holds the skill: a pack's); with a
    # trusted revision it is not used: in CI the local config is the PR's checkout
    local = {} if rev else {k.replace("-", "_"): v for k, v in settings.gate.items()}
    given = {k: v for k, v in flags.items() if v is not None}
    if loaded.measured:
        policy = load_policy(team, given, rev, stricter=local)
    else:
        policy = load_policy(team, {**local, **given}, rev)
    result = gated(skill_dir, team, policy, rev=rev)
    try:
        others = versions_to_gate(skill_dir, team, rev) if result.passed else []
    except TeamError as exc:  # a published tree no gate of this folder can stand for
        others, result = [], GateResult(False, str(exc))
    for other in others:
        found = gated(other, team, policy, rev=rev)
        if not found.passed:  # a version the pull request adds beside the one gated
            reason = f"{other.name}, which this tree also publishes: {found.reason}"
            result = msgspec.structs.replace(found, reason=reason)
            break
    if rev is None:
        note = (
            "policy, allowed_signers and receipts read from the team repo's work tree; in CI "
            "read them from the base branch (--base BRANCH, docs/ci.md)"
        )
    elif rev.implied:
        note = f"policy, allowed_signers and receipts read from {rev.ref} ({rev.implied})"
    else:
        return result
    return msgspec.structs.replace(result, note=note)
