"""The `skillbench` command line: argument parsing and rendering only."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillbench import __version__
from skillbench.evals import SpecError
from skillbench.models import ModelRefError, parse_model
from skillbench.sandbox.base import SandboxError
from skillbench.scrub import printable
from skillbench.skills import catalog, catalog_lines, digest, is_skill, read_skill
from skillbench.validate import NotASkill, check_skill, skills_at

if TYPE_CHECKING:
    from skillbench.config import Settings
    from skillbench.engine.plan import EvalOptions

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_INCONCLUSIVE = 3  # eval: too few decided units for any verdict (not a FAIL, not a pass)


class UsageError(Exception):
    """A user mistake: printed as one line, exit 2."""


def _out(line: str = "") -> None:
    # every line may carry text from a model, a sandbox or an asset: scrubbed and escaped
    print(printable(line), flush=True)


def _err(line: str) -> None:
    print(printable(line), file=sys.stderr, flush=True)


# --- commands ---------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    status = EXIT_OK
    checked = errors = warnings = 0
    for raw in args.paths:
        try:
            folders = skills_at(Path(raw))
        except NotASkill as exc:
            _err(f"error: {exc}")
            status = EXIT_USAGE
            continue
        for folder in folders:
            result = check_skill(folder)
            checked += 1
            errors += result.errors
            warnings += result.warnings
            for problem in result.problems:
                _out(str(problem))
    _out(
        f"checked {checked} skill{'s' * (checked != 1)}: {errors} error{'s' * (errors != 1)}, "
        f"{warnings} warning{'s' * (warnings != 1)}"
    )
    if status == EXIT_OK and errors:
        status = EXIT_FAIL
    return status


def cmd_digest(args: argparse.Namespace) -> int:
    folder = Path(args.skill)
    if not is_skill(folder):
        raise UsageError(f"{folder}: not a skill folder (no SKILL.md)")
    _out(digest(folder))
    return EXIT_OK


def cmd_catalog(args: argparse.Namespace) -> int:
    path = Path(args.root)
    if is_skill(path):  # a skill: show the catalog of the library root that holds it
        lines = catalog_lines(catalog(path.resolve().parent, include=read_skill(path)))
    else:
        skills_at(path)
        lines = catalog_lines(catalog(path))
    for line in lines:
        _out(line)
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from skillbench.agents import AGENTS, make_agent
    from skillbench.sandbox.doctor import diagnose
    from skillbench.sandbox.image import IMAGE, image_exists

    findings = diagnose()
    for f in findings:
        mark = "ok " if f.ok else "MISSING"
        _out(f"{mark:8}{f.name}: {f.detail}" + ("" if f.ok else f"\n        fix: {f.fix}"))
    for name in AGENTS:  # agent image variants are optional: built on first use
        variant = make_agent(name).image_name(IMAGE)
        if variant != IMAGE:
            found = "built" if image_exists(variant) else "not built yet (built on first use)"
            _out(
                f"{'note':8}agent {name}: {variant} {found}; `skillbench image build "
                f"--agent {name}` builds it now"
            )
    bad = sum(not f.ok for f in findings)
    _out("all set" if not bad else f"{bad} problem{'s' * (bad != 1)}; run the fixes above")
    return EXIT_OK if not bad else EXIT_FAIL


def cmd_image_build(args: argparse.Namespace) -> int:
    from skillbench.agents import AgentError, make_agent
    from skillbench.sandbox.image import ImageBuildError, build_image

    try:
        base = build_image(force=args.force, log=_out)
        for name in args.agent or ():
            loaded = _settings(Path.cwd(), args, ())
            agent = make_agent(name, **loaded.settings.agents.get(name, {}))
            _out(f"image {agent.image(base, _out)} ready")
    except (ImageBuildError, AgentError) as exc:
        _err(f"skillbench: image build failed: {exc}")
        return EXIT_FAIL
    return EXIT_OK


def _settings(start: Path, args: argparse.Namespace, names: Sequence[str]):
    from skillbench.config import ConfigError, load_settings

    flags = {name: getattr(args, name, None) for name in names}
    try:
        return load_settings(start, flags)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def cmd_eval(args: argparse.Namespace) -> int:
    import asyncio
    import errno
    import json
    import signal

    import msgspec

    from skillbench.engine.plan import EvalError, EvalOptions, prepare
    from skillbench.engine.run import EvalResult, execute
    from skillbench.report.progress import ProgressDisplay
    from skillbench.report.terminal import report_lines

    if args.resume and args.plan:
        raise UsageError("--plan and --resume exclude each other (the plan is in the run folder)")
    if args.resume:
        _resume_settings(args)
    skill_dir = args.skill
    if skill_dir is None:
        raise UsageError("eval needs a SKILL folder (or --resume RUN_DIR)")
    _check_runs(args)
    loaded = _settings(
        Path(skill_dir),
        args,
        ("model", "judge_model", "k", "parallel", "team", "agent", "min_net_lift"),
    )
    if args.triggers_only and args.execution_only:
        raise UsageError("--triggers-only and --execution-only exclude each other")
    if args.max_cost is not None and args.max_cost < 0:
        raise UsageError("--max-cost is a spend cap in USD: 0 or more")
    if args.junit:
        _check_output(Path(args.junit), "--junit")
    opts = EvalOptions(
        skill_dir=skill_dir,
        settings=loaded.settings,
        out=args.out,
        resume=args.resume,
        case=args.case,
        max_cost=args.max_cost,
        seed=args.seed,
        triggers=not args.execution_only,
        runs=args.runs,
        threshold=args.threshold,
        team=loaded.settings.team,
        trigger_method=args.trigger_method,
        fresh_baseline=args.fresh_baseline,
        aa=args.aa,
        library=args.with_library,
    )
    if args.oracle:  # the checks against the reference solutions: no model, no generation
        return _eval_oracle(opts)
    if not args.resume and (args.plan or args.max_cost is not None):
        from skillbench.engine.estimate import estimate, over_budget, plan_lines

        try:
            planned = estimate(opts)
        except EvalError as exc:
            for problem in exc.problems:
                _err(str(problem))
            _err(f"skillbench: error: {exc}")
            return EXIT_USAGE
        if args.plan:
            for line in plan_lines(planned, args.max_cost, loaded.settings.parallel):
                _out(line)
            _out("nothing was started (--plan)")
            return EXIT_OK
        warning = over_budget(planned, args.max_cost)
        if warning:
            _err(f"note: {warning}")
    if not args.no_gen and not args.resume:
        kinds = (
            ["triggers"]
            if args.triggers_only
            else (["cases"] if args.execution_only else ["cases", "triggers"])
        )
        opts.spent_before = _generate(Path(skill_dir), loaded.settings, kinds, only_missing=True)
    if args.triggers_only:
        return _eval_triggers_only(opts, args.json)
    try:
        prepared = prepare(opts, log=_err)
    except EvalError as exc:
        for problem in exc.problems:
            _err(str(problem))
        _err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    run_dir = prepared[1]
    if parse_model(loaded.settings.model).scripted:
        _err(
            f"note: using the scripted driver ({loaded.settings.model}): a fixed script, not a "
            "model; the verdict shows the pipeline works, not that the skill helps"
        )
    progress = ProgressDisplay(quiet=args.quiet)
    terminated: list[bool] = []

    async def until_signalled() -> EvalResult:
        # SIGTERM (CI cancelling a job, `timeout`) stops the run the way Ctrl-C does
        main_task = asyncio.current_task()
        assert main_task is not None

        def stop() -> None:
            terminated.append(True)
            main_task.cancel()

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        return await execute(prepared, opts, progress)

    resume = f"skillbench eval --resume {run_dir}"
    try:
        result = asyncio.run(until_signalled())
    except (KeyboardInterrupt, asyncio.CancelledError):
        progress.close()
        _err(
            f"{'terminated' if terminated else 'interrupted'}; nothing finished is lost. "
            f"Continue with: {resume}"
        )
        return 143 if terminated else 130
    except EvalError as exc:
        progress.close()
        _err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    except OSError as exc:  # the run folder could not be written: a full disk, most often
        progress.close()
        full = exc.errno == errno.ENOSPC
        _err(
            f"skillbench: error: writing the run folder {run_dir} failed: "
            f"{exc.strerror or exc}{' (the disk is full)' if full else ''}; nothing finished "
            f"is lost: {'free some space' if full else 'fix that'}, then continue with: "
            f"{resume}"
        )
        return EXIT_USAGE
    progress.close()
    summary = result.summary
    page = _write_page(Path(result.run_dir))
    if args.json:
        print(json.dumps(msgspec.to_builtins(summary), indent=2))
    else:
        for line in report_lines(summary):
            _out(line)
        _out(f"run: {result.run_dir}")
        if page is not None:
            _out(f"report: {page}")
    if args.junit:  # after the report: a failed write must not hide the results
        from skillbench.report.junit import eval_junit

        try:
            Path(args.junit).write_text(eval_junit(summary), encoding="utf-8")
        except OSError as exc:
            _err(
                f"skillbench: error: --junit {args.junit}: could not write it: "
                f"{exc.strerror or exc}"
            )
            return EXIT_USAGE
    if summary.verdict == "NONE":
        _err(
            "skillbench: nothing could be scored (see the run folder's journal.jsonl); "
            "the receipt says NONE and no gate accepts it"
        )
        return EXIT_USAGE
    if summary.verdict == "INCONCLUSIVE":
        return EXIT_INCONCLUSIVE
    return EXIT_FAIL if summary.verdict == "FAIL" else EXIT_OK


def _write_page(run_dir: Path) -> Path | None:
    """report.html in the run folder; a page that cannot be written is a warning, not a
    lost run (everything it shows is in the folder)."""
    from skillbench.report.html import write_report
    from skillbench.report.run_folder import RunFolderError

    try:
        return write_report(run_dir)
    except (OSError, RunFolderError) as exc:
        _err(f"skillbench: warning: report.html not written: {exc}")
        return None


def cmd_report(args: argparse.Namespace) -> int:
    import json

    import msgspec

    from skillbench.report.html import render
    from skillbench.report.junit import eval_junit
    from skillbench.report.markdown import markdown
    from skillbench.report.run_folder import RunFolderError, load_run
    from skillbench.report.terminal import report_lines

    try:
        run = load_run(Path(args.run))
    except RunFolderError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "terminal":
        for line in report_lines(run.summary):
            _out(line)
    elif args.format == "json":
        print(json.dumps(msgspec.to_builtins(run.summary), indent=2))
    elif args.format == "junit":
        sys.stdout.write(eval_junit(run.summary))
    elif args.format == "markdown":
        sys.stdout.write(markdown(run))
    else:
        sys.stdout.write(render(run))
    return EXIT_OK


def cmd_view(args: argparse.Namespace) -> int:
    import webbrowser

    from skillbench.report.run_folder import RunFolderError, load_run
    from skillbench.report.serve import report_url, server_for

    run_dir = Path(args.run)
    try:
        load_run(run_dir)
    except RunFolderError as exc:
        raise UsageError(str(exc)) from None
    if _write_page(run_dir) is None:
        return EXIT_USAGE
    try:
        server = server_for(run_dir, args.port)
    except OSError as exc:
        raise UsageError(
            f"--port {args.port}: cannot listen there ({exc.strerror or exc}); "
            "leave --port out for a free one"
        ) from None
    url = report_url(server)
    _out(f"serving {run_dir} at {url} (Ctrl-C to stop)")
    if args.open and not webbrowser.open(url):
        _err("note: no browser could be opened here; open the address yourself")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from skillbench.report.compare import compare_html, compare_lines, compare_runs
    from skillbench.report.run_folder import RunFolderError, load_run

    try:
        a, b = load_run(Path(args.run_a)), load_run(Path(args.run_b))
    except RunFolderError as exc:
        raise UsageError(str(exc)) from None
    diff = compare_runs(a, b)
    for line in compare_lines(diff):
        _out(line)
    if args.html:
        _check_output(Path(args.html), "--html")
        try:
            Path(args.html).write_text(compare_html(diff), encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"--html {args.html}: could not write it: {exc.strerror or exc}"
            ) from None
        _out(f"html: {args.html}")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    import shutil

    from skillbench.importers import IMPORTERS, ImportError_, check_import, write_import

    src = Path(args.src)
    if not src.exists():
        raise UsageError(f"{src}: no such file or folder")
    if args.into is None and not args.check:
        raise UsageError("import needs --into SKILL (or --check alone, to validate the source)")
    skill = Path(args.into) if args.into else _scratch_skill()
    if not is_skill(skill):
        raise UsageError(f"--into {skill}: not a skill folder (no SKILL.md)")
    try:
        result = IMPORTERS[args.format](src)
        problems = check_import(result, skill)
        written = [] if args.check else write_import(result, skill)
    except ImportError_ as exc:
        raise UsageError(str(exc)) from None
    finally:
        if args.into is None:
            shutil.rmtree(skill.parent, ignore_errors=True)
    verb = "would import" if args.check else "imported"
    where = f"{skill}/evals" if args.into else "a scratch skill"
    _out(
        f"{verb} {len(result.cases)} case(s) from {result.source} into {where}: "
        f"{', '.join(result.cases)}"
    )
    if result.unmapped:
        _out(f"not mapped ({len(result.unmapped)}):")
        for note in result.unmapped:
            _out(f"  {note}")
    for problem in problems:
        _out(str(problem))
    errors = [p for p in problems if p.severity == "error"]
    if args.check:
        _out(
            "check: the imported evals load cleanly (nothing written: --check)"
            if not errors
            else f"check: {len(errors)} error(s) (nothing written: --check)"
        )
    else:
        _out(f"wrote {len(written)} file(s); each says where it came from in its first lines")
    return EXIT_FAIL if errors else EXIT_OK


def _scratch_skill() -> Path:
    """An empty skill to validate an import against (`import --check` without --into)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="skillbench-import-")) / "imported"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: imported\ndescription: A scratch skill that "
        "holds an import being checked.\n---\n"
    )
    return folder


def cmd_triggers(args: argparse.Namespace) -> int:
    import asyncio
    import json

    from skillbench.engine.routing import RoutingError, measure
    from skillbench.report.terminal import trigger_lines
    from skillbench.triggers import TriggerReport, disagreements, steals, targets_at

    path = Path(args.path)
    skills_at(path)
    targets = targets_at(path)
    if not targets:
        raise UsageError(f"{path}: no skill there has an evals/triggers.yaml")
    _check_runs(args)
    loaded = _settings(path, args, ("model", "parallel", "agent"))
    settings = loaded.settings
    method = args.method or ("agent" if args.agent else "catalog")
    methods = ["catalog", "agent"] if method == "both" else [method]

    async def go() -> list[list[TriggerReport]]:
        return list(
            await asyncio.gather(
                *(
                    measure(
                        settings,
                        targets,
                        method=m,
                        agent=settings.agent,
                        runs=args.runs,
                        threshold=args.threshold,
                        log=_err,
                    )
                    for m in methods
                )
            )
        )

    if args.html:
        _check_output(Path(args.html), "--html")
    try:
        by_method = asyncio.run(go())
    except RoutingError as exc:
        raise UsageError(str(exc)) from None
    if args.html:
        from skillbench.report.html import render_triggers

        page = render_triggers(
            {
                reports[0].method: [r.summary() | {"skill": r.skill} for r in reports]
                for reports in by_method
            }
        )
        Path(args.html).write_text(page, encoding="utf-8")
    if args.json:
        out: dict[str, Any] = {}
        for pair in zip(*by_method, strict=True):  # both methods: keyed by method
            shown = {m: r.summary() for m, r in zip(methods, pair, strict=True)}
            out[pair[0].skill] = shown if len(pair) == 2 else pair[0].summary()
        print(json.dumps(out, indent=2))
        return EXIT_OK
    many = len(targets) > 1
    for reports in zip(*by_method, strict=True):
        if many:
            _out(f"{reports[0].skill}:")
        for report in reports:
            for line in trigger_lines(report.summary()):
                _out(("  " if many else "") + line)
        if len(reports) == 2:
            differ = disagreements(*reports)
            pad = "  " if many else ""
            _out(f"{pad}methods disagree on {len(differ)} prompt(s)" + (":" if differ else ""))
            for prompt, expected, first, second in differ:
                _out(
                    f'{pad}  "{prompt}" (should{"" if expected else " not"} trigger): '
                    f"{reports[0].method} {_fired(first)}, "
                    f"{reports[1].method} {_fired(second)}"
                )
    for one in by_method:
        stolen = steals(one)
        if many and stolen:
            label = f", {one[0].method}" if len(by_method) > 1 else ""
            _out(f"confusion (who took each miss{label}):")
            for skill, prompt, by in stolen:
                _out(f'  {skill}: "{prompt}" -> {", ".join(by) or "nothing selected"}')
    return EXIT_OK


def _fired(fired: bool | None) -> str:
    return {True: "fired", False: "did not fire", None: "errored"}[fired]


def _check_runs(args: argparse.Namespace) -> None:
    from skillbench.config import MAX_PARALLEL

    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    if not 0 < args.threshold <= 1:
        raise UsageError("--threshold is a trigger rate in (0, 1]")
    if args.parallel is not None and not 1 <= args.parallel <= MAX_PARALLEL:
        raise UsageError(
            f"--parallel must be between 1 and {MAX_PARALLEL} (each session is a "
            "sandbox; more than the machine can run only queues)"
        )


def _eval_oracle(opts: EvalOptions) -> int:
    import asyncio

    from skillbench.engine.oracle import oracle_lines, oracle_run
    from skillbench.engine.plan import EvalError

    try:
        results = asyncio.run(oracle_run(opts, log=_err))
    except EvalError as exc:
        for problem in exc.problems:
            _err(str(problem))
        _err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    for line in oracle_lines(results):
        _out(line)
    if not any(r.passed is not None for r in results):
        _err("skillbench: no case has a reference solution (`oracle:` in its case file)")
        return EXIT_USAGE
    return EXIT_FAIL if any(r.passed is False for r in results) else EXIT_OK


def _eval_triggers_only(opts: EvalOptions, as_json: bool) -> int:
    import asyncio
    import json

    from skillbench.engine.plan import EvalError
    from skillbench.engine.run import triggers_only
    from skillbench.report.terminal import trigger_lines

    try:
        report = asyncio.run(triggers_only(opts))
    except EvalError as exc:
        for problem in exc.problems:
            _err(str(problem))
        _err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    if as_json:
        print(json.dumps({"triggers": report.summary()}, indent=2))
    else:
        for line in trigger_lines(report.summary()):
            _out(line)
    return EXIT_OK


def _generate(skill_dir: Path, settings: Settings, kinds: list[str], only_missing: bool) -> float:
    from skillbench.engine.gen import generate_missing
    from skillbench.engine.plan import EvalError

    if not is_skill(skill_dir):
        raise UsageError(f"{skill_dir}: not a skill folder (no SKILL.md)")
    try:
        return generate_missing(skill_dir, settings, kinds, _err, only_missing=only_missing)
    except EvalError as exc:
        raise UsageError(str(exc)) from None


def cmd_gen(args: argparse.Namespace) -> int:
    loaded = _settings(Path(args.skill), args, ("model",))
    kinds = [args.kind] if args.kind else ["cases", "triggers"]
    _generate(Path(args.skill), loaded.settings, kinds, only_missing=False)
    return EXIT_OK


def cmd_publish(args: argparse.Namespace) -> int:
    from skillbench.team import TeamError, publish

    loaded = _settings(Path(args.skill), args, ("team",))
    team = loaded.settings.team
    if not team:
        raise UsageError("publish needs --team REPO (or `team` in skillbench.toml)")
    if not is_skill(Path(args.skill)):
        raise UsageError(f"{args.skill}: not a skill folder (no SKILL.md)")
    key = args.sign_key or loaded.settings.sign.key
    try:
        _out(publish(Path(args.skill), Path(team), sign_key=Path(key) if key else None))
    except TeamError as exc:
        _err(f"skillbench: publish refused: {exc}")
        return EXIT_FAIL
    return EXIT_OK


def cmd_gate(args: argparse.Namespace) -> int:
    from skillbench.report.junit import gate_junit
    from skillbench.team import TeamError, gate, load_policy, skill_at

    skill_dir = Path(args.skill)
    if not is_skill(skill_dir):
        raise UsageError(f"{skill_dir}: not a skill folder (no SKILL.md)")
    if args.junit:
        _check_output(Path(args.junit), "--junit")
    loaded = _settings(skill_dir, args, ("team",))
    team = Path(loaded.settings.team) if loaded.settings.team else None
    flags = {
        "require": args.require,
        "min_recall": args.min_recall,
        "min_precision": args.min_precision,
        "allow_incumbent_fail": True if args.allow_incumbent_fail else None,
        "allow_partial": True if args.allow_partial else None,
        "require_power": True if args.require_power else None,
        "allow_inconclusive": True if args.allow_inconclusive else None,
        "trigger_method": args.trigger_method,
        "require_signed": args.require_signed,
        "allow_endpoints": args.allow_endpoints,
    }
    # the local config's gate table sits between the team repo's policy and the flags
    local = {k.replace("-", "_"): v for k, v in loaded.settings.gate.items()}
    flags = {**local, **{k: v for k, v in flags.items() if v is not None}}
    try:
        policy = load_policy(team, flags)
        result = gate(skill_dir, team, policy)
    except TeamError as exc:
        raise UsageError(str(exc)) from None
    name = skill_at(skill_dir).name
    if args.junit:
        Path(args.junit).write_text(gate_junit(name, result.passed, result.reason), "utf-8")
    if result.passed:
        _out(f"gate passed: {name}: {result.reason}")
        return EXIT_OK
    _out(f"gate refused: {name}: {result.reason}")
    return EXIT_FAIL


def cmd_receipts(args: argparse.Namespace) -> int:
    from skillbench.team import known_receipts

    skill_dir = Path(args.skill)
    skill = read_skill(skill_dir)
    current = digest(skill_dir)
    loaded = _settings(skill_dir, args, ("team",))
    team = Path(loaded.settings.team) if loaded.settings.team else None
    found = known_receipts(skill.name, team)
    if not found:
        _out(f"no receipts for {skill.name}")
        return EXIT_OK
    for where, r in found:
        mark = "*" if r.digest == current else " "
        _out(
            f"{mark} {r.digest[:19]}  {r.provenance.created_at}  {r.run_id}  {r.verdict:8}  {where}"
        )
    _out("(* = the skill's current bytes)")
    return EXIT_OK


def _check_output(path: Path, flag: str) -> None:
    """Refuse, before any work, an output file that could not be written at the end."""
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a folder; name a file")
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{flag} {path}: the folder {folder} is not writable")


def _resume_settings(args: argparse.Namespace) -> None:
    """A resumed run keeps the settings it started with: the plan's skill folder, models,
    repetitions and team, unless a flag names one explicitly (and a changed one is refused)."""
    import json

    run_dir = Path(args.resume)
    try:
        plan = json.loads((run_dir / "plan.json").read_text())
        args.skill = args.skill or str(plan["skill_dir"])
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(f"--resume {run_dir}: no readable plan.json there") from None
    for name in ("model", "judge_model", "k", "team", "agent", "min_net_lift"):
        if getattr(args, name) is None and plan.get(name) is not None:
            setattr(args, name, plan[name])
    if args.with_library is None and isinstance(plan.get("library"), dict):
        args.with_library = plan["library"].get("path")


def cmd_config(args: argparse.Namespace) -> int:
    loaded = _settings(Path(args.path), args, ())
    import msgspec

    values = msgspec.to_builtins(loaded.settings)
    _out(f"config file: {loaded.path or 'none found'}")
    for name, value in values.items():
        _out(f"{name} = {value!r}    ({loaded.sources.get(name, 'default')})")
    return EXIT_OK


# --- parser -----------------------------------------------------------------------------

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillbench",
        description="Measure whether an agent skill makes an LLM agent better, and whether "
        "it gets picked for the right requests.",
        epilog="Run `skillbench COMMAND --help` for each command's options.",
    )
    parser.add_argument("--version", action="version", version=f"skillbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, handler: Handler, help: str, description: str
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=description)
        p.set_defaults(handler=handler)
        return p

    p = command(
        "check",
        cmd_check,
        "validate skills and their eval assets (no model calls)",
        "Validate SKILL.md, the skill's files and its eval assets (evals/cases/*.yaml, "
        "evals/suite.yaml, evals/triggers.yaml). Every problem is one line "
        "`path:line: severity: message`. Exit 0 when clean or only warnings, 1 when errors "
        "were found, 2 when a path is neither a skill nor a library root.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a skill folder or a library root")

    p = command(
        "digest",
        cmd_digest,
        "print a skill's version digest",
        "Print the skill's content digest (sha256:<hex>): its version identity. It covers "
        "every file except the top-level evals/, .git and OS litter, so editing evals never "
        "changes the version.",
    )
    p.add_argument("skill", metavar="SKILL", help="a skill folder")

    p = command(
        "catalog",
        cmd_catalog,
        "print the catalog a trigger call shows",
        "Print one `- name: description` line per skill of a library root, sorted by name: "
        "exactly what a trigger call shows the model. Given a skill, show the catalog of the "
        "library root that holds it.",
    )
    p.add_argument("root", metavar="ROOT", help="a library root (or a skill inside one)")

    p = command(
        "eval",
        cmd_eval,
        "run the paired-arm eval of a skill",
        "Run every case (and the suite) with the skill (candidate) and without it (baseline), "
        "each arm in its own podman sandbox, score the checks, send ties with a rubric to the "
        "judge, and print the verdict. Everything lands in the run folder (--out, default "
        ".skillbench/runs/<run_id>/); a run cut short continues with --resume. Exit 0 done, "
        "1 verdict FAIL, 2 bad input or nothing scored, 3 verdict INCONCLUSIVE (fewer than 5 "
        "decided units).",
    )
    p.add_argument("skill", nargs="?", metavar="SKILL", help="the skill folder")
    p.add_argument("--model", help="agent model: anthropic/<m>, openai/<m> or scripted/<name>")
    p.add_argument(
        "--agent",
        help="what runs in the arms: builtin (default), claude-code or "
        "codex (the real CLI in the sandbox)",
    )
    p.add_argument("--judge-model", dest="judge_model", help="judge model (default: --model)")
    p.add_argument("--k", type=int, help="repetitions of every case (default 1)")
    p.add_argument(
        "--min-net-lift",
        dest="min_net_lift",
        type=float,
        metavar="SHARE",
        help="the net lift over units PASS and FAIL need beyond significance (default 0.2)",
    )
    p.add_argument(
        "--parallel", type=int, help="sessions (and trigger calls) at once, at most 64 (default 4)"
    )
    p.add_argument("--case", metavar="STEM", help="run one case (or `suite`)")
    p.add_argument("--out", metavar="DIR", help="run folder")
    p.add_argument(
        "--resume", metavar="RUN_DIR", help="continue a run; reruns only what is missing"
    )
    p.add_argument(
        "--max-cost",
        dest="max_cost",
        type=float,
        metavar="USD",
        help="stop starting sessions once spend passes this",
    )
    p.add_argument("--seed", type=int, help="seed for the judge's order (default random)")
    p.add_argument("--team", metavar="REPO", help="team repo: adds the incumbent arm")
    p.add_argument(
        "--no-gen",
        dest="no_gen",
        action="store_true",
        help="do not generate missing evals with the model",
    )
    p.add_argument("--triggers-only", action="store_true", help="measure triggers only")
    p.add_argument("--execution-only", action="store_true", help="skip the trigger measurement")
    p.add_argument("--runs", type=int, default=1, help="trigger calls per prompt (default 1)")
    p.add_argument("--threshold", type=float, default=0.5, help="trigger rate that counts as fired")
    p.add_argument(
        "--oracle",
        action="store_true",
        help="run each case's reference solution (`oracle:`) instead of an agent "
        "and report whether every check passes; no model is called",
    )
    p.add_argument(
        "--aa",
        action="store_true",
        help="also run a second baseline arm and report how often the two differ: "
        "the noise floor a real lift must clear",
    )
    p.add_argument(
        "--with-library",
        dest="with_library",
        metavar="DIR",
        help="the library arm: every arm also stages the other skills of the library root DIR "
        "(the baseline: the library minus this skill), so the verdict and activation say "
        "whether the skill still helps, and still fires, beside its siblings",
    )
    p.add_argument(
        "--plan",
        action="store_true",
        help="print the sessions that will run, model calls, estimated cost and time, and "
        "exit without running any (cases with `requires` get a probe sandbox)",
    )
    p.add_argument(
        "--fresh-baseline",
        dest="fresh_baseline",
        action="store_true",
        help="run baseline and incumbent sessions again instead of reusing "
        "identical ones from earlier runs",
    )
    p.add_argument(
        "--trigger-method",
        dest="trigger_method",
        choices=["catalog", "agent"],
        help="how triggers are measured (default: agent with a CLI --agent, else catalog)",
    )
    p.add_argument("--json", action="store_true", help="print summary.json instead of the report")
    p.add_argument("--junit", metavar="FILE", help="also write the rows as JUnit XML")
    p.add_argument("--quiet", action="store_true", help="no progress output")

    p = command(
        "triggers",
        cmd_triggers,
        "measure trigger recall and precision",
        "For every prompt in evals/triggers.yaml, find which skills of the library get picked "
        "for that request, and count how often the skill is picked when it should be (recall) "
        "and only then (precision). Two methods: the catalog call (the model, no tools, is "
        "shown the library's catalog and asked which skills it would load) and the agent (the "
        "real agent CLI runs the request in a sandbox with every skill of the library staged; "
        "what it loads is what it picked; a canary prompt naming the skill must fire first). "
        "Given a library root, evaluate every skill with a triggers file and show which "
        "sibling took each miss.",
    )
    p.add_argument("path", metavar="SKILL|ROOT", help="a skill folder or a library root")
    p.add_argument("--model", help="anthropic/<m>, openai/<m> or scripted/<name>")
    p.add_argument(
        "--agent",
        help="measure by this agent's own routing: claude-code or codex (implies --method agent)",
    )
    p.add_argument(
        "--method",
        choices=["catalog", "agent", "both"],
        help="catalog call (default without --agent), agent routing, or both side "
        "by side with the prompts they disagree on",
    )
    p.add_argument("--runs", type=int, default=1, help="ask each prompt N times (default 1)")
    p.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="trigger rate that counts as fired (default 0.5)",
    )
    p.add_argument(
        "--parallel", type=int, help="calls at once, at most 64 (default: config `parallel`, or 4)"
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument(
        "--html",
        metavar="FILE",
        help="also write the results as a page, with the "
        "library's confusion matrix (who took each skill's prompts)",
    )

    p = command(
        "import",
        cmd_import,
        "turn eval suites in other formats into native evals",
        "Write native cases (with their verifier, reward or grader scripts and support files) "
        "into the skill's evals/ from a Harbor task or dataset, a Margin Eval suite or a "
        "skill-optimizer suite. Each file is headed with where it came from; nothing existing "
        "is overwritten; every source field that could not be mapped is listed with why. "
        "--check imports into a scratch copy and validates it, writing nothing.",
    )
    p.add_argument(
        "format", choices=["harbor", "margin", "skill-optimizer"], help="the source's format"
    )
    p.add_argument("src", metavar="SRC", help="the task, dataset, suite folder or suite file")
    p.add_argument(
        "--into",
        metavar="SKILL",
        help="the skill to add evals to (with --check alone: an empty one)",
    )
    p.add_argument("--check", action="store_true", help="validate only; write nothing")

    p = command(
        "gen",
        cmd_gen,
        "generate missing evals with the model",
        "Write evals the skill lacks with the model: 3-7 execution cases covering the buckets "
        "(at least one adversarial, declarative checks only, each dry-run seeded in a "
        "sandbox) and/or a triggers file with 5 should-trigger and 5 near-miss "
        "should-not-trigger prompts. Files carry a header saying they were generated; an "
        "existing file is never replaced.",
    )
    p.add_argument("skill", metavar="SKILL", help="the skill folder")
    p.add_argument("--kind", choices=["cases", "triggers"], help="only this kind")
    p.add_argument("--model", help="anthropic/<m>, openai/<m> or scripted/<name>")

    p = command(
        "publish",
        cmd_publish,
        "publish the skill into a team repo",
        "Copy the skill's bytes into the team repo as skills/<name>/v<N>/ (identical bytes "
        "reuse their version; version folders are never modified), update skills/<name>/evals/ "
        "(add or modify, never remove), attach the local receipts for these exact bytes under "
        "evals/<name>/v<N>/ (signed with --sign-key, or [sign] key, when they are not), and make "
        "one commit. Refuses a repo with uncommitted changes or a version folder edited by "
        "hand.",
    )
    p.add_argument("skill", metavar="SKILL", help="the skill folder")
    p.add_argument("--team", metavar="REPO", help="the team repo (a git work tree)")
    p.add_argument(
        "--sign-key",
        dest="sign_key",
        metavar="PATH",
        help="sign the receipts attached unsigned with this SSH private key ([sign] key)",
    )

    p = command(
        "gate",
        cmd_gate,
        "pre-publish gate: exit 0 only when a receipt meets the policy",
        "Find the newest receipt that measured the skill's exact current bytes (team repo and "
        "local store; a run that scored nothing never counts; under require-signed only "
        "receipts signed by an allowed signer) and check it against the policy: its verdict, "
        "counts and stats follow from its rows and it is not dated in the future, made by a "
        "real model (not the scripted driver) at an allowed endpoint, complete (unless "
        "--allow-partial), verdict vs baseline (INCONCLUSIVE only with --allow-inconclusive), "
        "not FAIL vs the incumbent, trigger recall and "
        "precision minimums. Policy from flags, else "
        "[tool.skillbench.gate] in the team repo's pyproject.toml or [gate] in its "
        "skillbench.toml. Exit 0 pass, 1 refused (with a one-line reason).",
    )
    p.add_argument(
        "skill", metavar="SKILL", help="the skill folder, or a published skills/<name>/v<N> folder"
    )
    p.add_argument("--team", metavar="REPO", help="the team repo")
    p.add_argument("--require", choices=["PASS", "NEUTRAL"], help="weakest verdict allowed")
    p.add_argument("--min-recall", dest="min_recall", type=float, help="trigger recall floor")
    p.add_argument(
        "--min-precision", dest="min_precision", type=float, help="trigger precision floor"
    )
    p.add_argument(
        "--allow-incumbent-fail",
        action="store_true",
        help="do not refuse a FAIL against the incumbent",
    )
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="accept a receipt whose run did not score every row",
    )
    p.add_argument(
        "--require-power",
        action="store_true",
        help="refuse a verdict the sign test could not make significant",
    )
    p.add_argument(
        "--allow-inconclusive",
        action="store_true",
        help="accept an INCONCLUSIVE verdict (fewer than 5 decided units)",
    )
    p.add_argument(
        "--trigger-method",
        dest="trigger_method",
        choices=["agent", "catalog"],
        help="accept trigger numbers only from this method",
    )
    p.add_argument(
        "--require-signed",
        dest="require_signed",
        action=argparse.BooleanOptionalAction,
        help="accept only receipts signed by a key in the team repo's "
        ".skillbench/allowed_signers (default: when that file exists)",
    )
    p.add_argument(
        "--allow-endpoint",
        dest="allow_endpoints",
        action="append",
        metavar="URL",
        help="accept models reached at this endpoint (repeatable; replaces the default, "
        "the providers' own APIs)",
    )
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")

    p = command(
        "report",
        cmd_report,
        "render a finished run in any format",
        "Render a finished run folder as the terminal report, summary JSON, JUnit XML, a "
        "markdown PR comment (verdict, why, the rows that are not ties) or the self-contained "
        "report.html, on stdout. Built from the run folder alone.",
    )
    p.add_argument("run", metavar="RUN", help="a run folder")
    p.add_argument(
        "--format",
        choices=["terminal", "json", "junit", "markdown", "html"],
        default="terminal",
        help="what to render (default terminal)",
    )

    p = command(
        "view",
        cmd_view,
        "serve a run's report.html on 127.0.0.1",
        "Build the run folder's report.html if needed and serve the folder on 127.0.0.1 (a "
        "free port unless --port) until Ctrl-C; the address is printed.",
    )
    p.add_argument("run", metavar="RUN", help="a run folder")
    p.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    p.add_argument("--open", action="store_true", help="open a browser too, when there is one")

    p = command(
        "compare",
        cmd_compare,
        "what changed between two runs, row by row",
        "Show the verdicts of two runs side by side and every row whose outcome changed "
        "(e.g. v3 and v4 of a skill, or two models), and the rows only one run has.",
    )
    p.add_argument("run_a", metavar="RUN_A", help="the earlier run folder")
    p.add_argument("run_b", metavar="RUN_B", help="the later run folder")
    p.add_argument("--html", metavar="FILE", help="also write the comparison as HTML")

    p = command(
        "receipts",
        cmd_receipts,
        "list the receipts known for a skill's versions",
        "List receipts from the local store ($SKILLBENCH_HOME, default ~/.skillbench) and, "
        "with --team, from the team repo; the skill's current bytes are starred.",
    )
    p.add_argument("skill", metavar="SKILL", help="the skill folder")
    p.add_argument("--team", metavar="REPO", help="the team repo")

    p = command(
        "config",
        cmd_config,
        "show the effective settings and where each came from",
        "Show every setting's effective value and its source: a flag, SKILLBENCH_MODEL, "
        "skillbench.toml or [tool.skillbench] in pyproject.toml (the nearest enclosing one), "
        "or the built-in default.",
    )
    p.add_argument("path", nargs="?", default=".", help="where to look for config (default .)")

    command(
        "doctor",
        cmd_doctor,
        "check podman, the runtime and the sandbox image",
        "Check everything the sandboxes need (podman, runc, mmdebstrap, the containers.conf "
        "drop-in, the sandbox image) and print the exact command that fixes each gap. "
        "Exit 0 when all is set, 1 otherwise.",
    )

    image = sub.add_parser(
        "image", help="manage the sandbox image", description="Manage the sandbox image."
    )
    image_sub = image.add_subparsers(dest="image_command", required=True, metavar="ACTION")
    p = image_sub.add_parser(
        "build",
        help="build the sandbox image",
        description="Build the sandbox image locally (mmdebstrap from the host's Debian "
        "sources, imported into podman; or the bundled Containerfile where mmdebstrap is "
        "missing). Skips the build when the image exists, unless --force.",
    )
    p.add_argument("--force", action="store_true", help="rebuild even if the image exists")
    p.add_argument(
        "--agent",
        action="append",
        help="also build this agent's image (claude-code, codex); repeatable",
    )
    p.set_defaults(handler=cmd_image_build)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `skillbench` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except UsageError as exc:
        _err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    except NotASkill as exc:
        _err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    except SpecError as exc:
        for problem in exc.problems:
            _err(str(problem))
        return EXIT_USAGE
    except ModelRefError as exc:
        _err(f"skillbench: error: --model: {exc}")
        return EXIT_USAGE
    except SandboxError as exc:
        _err(f"skillbench: sandbox error: {exc}; `skillbench doctor` says what to fix")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("skillbench: interrupted")
        return 130
