"""`eval`: the paired-arm eval of a skill, its --plan, --oracle and --triggers-only modes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    check_output,
    check_runs,
    command,
    err,
    out,
    settings_for,
    write_page,
)
from skillbench.cli.gen import generate
from skillbench.models import parse_model

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers
    from skillbench.engine.plan import EvalOptions


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
    check_runs(args)
    loaded = settings_for(
        Path(skill_dir), args, ("model", "judge_model", "k", "parallel", "team", "agent")
    )
    if args.triggers_only and args.execution_only:
        raise UsageError("--triggers-only and --execution-only exclude each other")
    if args.max_cost is not None and args.max_cost < 0:
        raise UsageError("--max-cost is a spend cap in USD: 0 or more")
    if args.junit:
        check_output(Path(args.junit), "--junit")
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
    )
    if args.oracle:  # the checks against the reference solutions: no model, no generation
        return _eval_oracle(opts)
    if not args.resume and (args.plan or args.max_cost is not None):
        from skillbench.engine.estimate import estimate, over_budget, plan_lines

        try:
            planned = estimate(opts)
        except EvalError as exc:
            for problem in exc.problems:
                err(str(problem))
            err(f"skillbench: error: {exc}")
            return EXIT_USAGE
        if args.plan:
            for line in plan_lines(planned, args.max_cost, loaded.settings.parallel):
                out(line)
            out("nothing was started (--plan)")
            return EXIT_OK
        warning = over_budget(planned, args.max_cost)
        if warning:
            err(f"note: {warning}")
    if not args.no_gen and not args.resume:
        kinds = (
            ["triggers"]
            if args.triggers_only
            else (["cases"] if args.execution_only else ["cases", "triggers"])
        )
        opts.spent_before = generate(Path(skill_dir), loaded.settings, kinds, only_missing=True)
    if args.triggers_only:
        return _eval_triggers_only(opts, args.json)
    try:
        prepared = prepare(opts, log=err)
    except EvalError as exc:
        for problem in exc.problems:
            err(str(problem))
        err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    run_dir = prepared[1]
    if parse_model(loaded.settings.model).scripted:
        err(
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
        err(
            f"{'terminated' if terminated else 'interrupted'}; nothing finished is lost. "
            f"Continue with: {resume}"
        )
        return 143 if terminated else 130
    except EvalError as exc:
        progress.close()
        err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    except OSError as exc:  # the run folder could not be written: a full disk, most often
        progress.close()
        full = exc.errno == errno.ENOSPC
        err(
            f"skillbench: error: writing the run folder {run_dir} failed: "
            f"{exc.strerror or exc}{' (the disk is full)' if full else ''}; nothing finished "
            f"is lost: {'free some space' if full else 'fix that'}, then continue with: "
            f"{resume}"
        )
        return EXIT_USAGE
    progress.close()
    summary = result.summary
    page = write_page(Path(result.run_dir))
    if args.json:
        print(json.dumps(msgspec.to_builtins(summary), indent=2))
    else:
        for line in report_lines(summary):
            out(line)
        out(f"run: {result.run_dir}")
        if page is not None:
            out(f"report: {page}")
    if args.junit:  # after the report: a failed write must not hide the results
        from skillbench.report.junit import eval_junit

        try:
            Path(args.junit).write_text(eval_junit(summary), encoding="utf-8")
        except OSError as exc:
            err(
                f"skillbench: error: --junit {args.junit}: could not write it: "
                f"{exc.strerror or exc}"
            )
            return EXIT_USAGE
    if summary.verdict == "NONE":
        err(
            "skillbench: nothing could be scored (see the run folder's journal.jsonl); "
            "the receipt says NONE and no gate accepts it"
        )
        return EXIT_USAGE
    return EXIT_FAIL if summary.verdict == "FAIL" else EXIT_OK


def _eval_oracle(opts: EvalOptions) -> int:
    import asyncio

    from skillbench.engine.oracle import oracle_lines, oracle_run
    from skillbench.engine.plan import EvalError

    try:
        results = asyncio.run(oracle_run(opts, log=err))
    except EvalError as exc:
        for problem in exc.problems:
            err(str(problem))
        err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    for line in oracle_lines(results):
        out(line)
    if not any(r.passed is not None for r in results):
        err("skillbench: no case has a reference solution (`oracle:` in its case file)")
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
            err(str(problem))
        err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    if as_json:
        print(json.dumps({"triggers": report.summary()}, indent=2))
    else:
        for line in trigger_lines(report.summary()):
            out(line)
    return EXIT_OK


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
    for name in ("model", "judge_model", "k", "team", "agent"):
        if getattr(args, name) is None and plan.get(name) is not None:
            setattr(args, name, plan[name])


def register_eval(sub: Subparsers) -> None:
    p = command(
        sub,
        "eval",
        cmd_eval,
        "run the paired-arm eval of a skill",
        "Run every case (and the suite) with the skill (candidate) and without it (baseline), "
        "each arm in its own podman sandbox, score the checks, send ties with a rubric to the "
        "judge, and print the verdict. Everything lands in the run folder (--out, default "
        ".skillbench/runs/<run_id>/); a run cut short continues with --resume. Exit 0 done, "
        "1 verdict FAIL, 2 bad input or nothing scored.",
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
        "--plan",
        action="store_true",
        help="print the sessions, model calls, estimated cost and time, and exit "
        "without starting anything",
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
