"""`eval`: the paired-arm eval of a skill, its --plan, --oracle and --triggers-only modes.
Parses the flags into `skillbench.Options`, calls the API, renders what it returns."""

from __future__ import annotations

import argparse
import json
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from skillbench import api
from skillbench.agents import AGENTS, DEFAULT_AGENT
from skillbench.cli.common import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    check_output,
    command,
    err,
    out,
    write_page,
)
from skillbench.errors import Interrupted

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def options_of(args: argparse.Namespace) -> api.Options:
    """The API's options from the eval flags (a flag left out is None: the config decides)."""
    return api.Options(
        model=args.model,
        judge_model=args.judge_model,
        grader=args.grader,
        grader_runs=args.grader_runs,
        agent=args.agent,
        k=args.k,
        min_net_lift=args.min_net_lift,
        sequential=args.sequential,
        parallel=args.parallel,
        max_timeout=args.max_timeout,
        network=args.network,
        team=args.team,
        out=args.out,
        resume=args.resume,
        case=args.case,
        max_cost=args.max_cost,
        seed=args.seed,
        generate=not args.no_gen,
        triggers=not args.execution_only,
        runs=args.runs,
        threshold=args.threshold,
        trigger_method=args.trigger_method,
        fresh_baseline=args.fresh_baseline,
        aa=args.aa,
        with_library=args.with_library,
        cluster=args.cluster,
        evals=args.evals or None,
    )


def cmd_eval(args: argparse.Namespace) -> int:
    from skillbench.report.progress import ProgressDisplay
    from skillbench.report.terminal import report_lines

    if args.resume and args.plan:
        raise UsageError("--plan and --resume exclude each other (the plan is in the run folder)")
    if args.triggers_only and args.execution_only:
        raise UsageError("--triggers-only and --execution-only exclude each other")
    if args.junit:
        check_output(Path(args.junit), "--junit")
    options = options_of(args)
    from skillbench.engine.sets import is_set

    if is_set(args.skill, options, args.only or [], args.changed_since):
        return _set(args, options)
    if args.only or args.changed_since:
        raise UsageError("--only and --changed-since pick skills of a library root: name one")
    if args.oracle:  # the checks against the reference solutions: no model, no generation
        return _oracle(args.skill, options)
    if args.plan:
        from skillbench.engine.estimate import plan_lines

        for line in plan_lines(api.estimate(args.skill, options=options), args.max_cost):
            out(line)
        out("nothing was started (--plan)")
        return EXIT_OK
    if args.triggers_only:
        return _triggers_only(args.skill, options, args.json)
    progress = ProgressDisplay(quiet=args.quiet)

    def last_words(stopped: Interrupted) -> None:
        progress.close()
        err(str(stopped))

    try:
        with closing(progress):  # closed before any error is printed
            result = api.evaluate(
                args.skill,
                options=options,
                progress=progress,
                log=err,
                on_second_signal=last_words,
            )
    except Interrupted as exc:
        err(str(exc))
        return exc.code
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
    if summary.verdict == "INCONCLUSIVE":
        return EXIT_INCONCLUSIVE
    return EXIT_FAIL if summary.verdict == "FAIL" else EXIT_OK


def _set(args: argparse.Namespace, options: api.Options) -> int:
    """A set run: a library and/or agents × models, one table of cells (docs/results.md)."""
    from skillbench.engine.sets import split_list
    from skillbench.report.matrix import as_json, terminal, write_set_report
    from skillbench.report.progress import ProgressDisplay
    from skillbench.results.set_folder import load_set

    for flag, given in (
        ("--oracle", args.oracle),
        ("--triggers-only", args.triggers_only),
        ("--junit", args.junit),
    ):
        if given:
            raise UsageError(f"{flag} takes one skill; a set run (a library or a matrix) has cells")
    agents, models = split_list(args.agent), split_list(args.model)
    single = msgspec.structs.replace(
        options,
        agent=agents[0] if len(agents) == 1 else None,
        model=models[0] if len(models) == 1 else None,
    )
    if args.plan:
        from skillbench.engine.sets import set_plan_lines

        plan = api.estimate_set(
            [args.skill] if args.skill else [],
            agents=agents,
            models=models,
            only=args.only or [],
            changed_since=args.changed_since,
            options=single,
            log=err,
        )
        for line in set_plan_lines(plan):
            out(line)
        out("nothing was started (--plan)")
        return EXIT_OK
    progress = ProgressDisplay(quiet=args.quiet)

    def last_words(stopped: Interrupted) -> None:
        progress.close()
        err(str(stopped))

    try:
        with closing(progress):
            result = api.evaluate_set(
                [args.skill] if args.skill else [],
                agents=agents,
                models=models,
                only=args.only or [],
                changed_since=args.changed_since,
                options=single,
                progress=progress,
                log=err,
                on_second_signal=last_words,
            )
    except Interrupted as exc:
        err(str(exc))
        return exc.code
    ran = [c.result for c in result.cells if c.result is not None]
    for cell in ran:
        write_page(Path(cell.run_dir))
    # rendered from the set folder as `report SETDIR` renders it: the same table and JSON
    folder = load_set(Path(result.set_dir))
    if args.json:
        print(as_json(folder), end="")
    else:
        print(terminal(folder), end="")
        out(f"spend: ${result.spend_usd:.2f} across {len(result.cells)} cell(s)")
        out(f"set: {result.set_dir}")
        try:
            out(f"report: {write_set_report(Path(result.set_dir))}")
        except OSError as exc:
            err(f"skillbench: warning: the set's report.html not written: {exc}")
    verdicts = {r.summary.verdict for r in ran}
    if "FAIL" in verdicts:
        return EXIT_FAIL
    if "NONE" in verdicts or any(c.cell.status == "failed" for c in result.cells):
        err("skillbench: some cells did not run or scored nothing (see set.json and their folders)")
        return EXIT_USAGE
    return EXIT_INCONCLUSIVE if "INCONCLUSIVE" in verdicts else EXIT_OK


def _oracle(skill: str | None, options: api.Options) -> int:
    from skillbench.engine.oracle import oracle_lines

    results = api.run_oracles(skill, options=options, log=err)
    for line in oracle_lines(results):
        out(line)
    if not any(r.passed is not None for r in results):
        skipped = [r for r in results if r.note and not r.note.startswith("no reference")]
        if skipped:  # there were solutions; none could run (the lines above say why)
            err(f"skillbench: no reference solution could run: {len(skipped)} case(s) skipped")
        else:
            err("skillbench: no case has a reference solution (`oracle:` in its case file)")
        return EXIT_USAGE
    bad = any(r.passed is False or r.do_nothing_passed for r in results)
    return EXIT_FAIL if bad else EXIT_OK


def _triggers_only(skill: str | None, options: api.Options, as_json: bool) -> int:
    from skillbench.report.terminal import trigger_lines

    report = api.evaluate_triggers(skill, options=options, log=err)
    if as_json:
        print(json.dumps({"triggers": report.summary()}, indent=2))
    else:
        for line in trigger_lines(report.summary()):
            out(line)
    return EXIT_OK


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
        "1 verdict FAIL, 2 bad input or nothing scored, 3 verdict INCONCLUSIVE (fewer than 5 "
        "decided units).",
    )
    p.add_argument(
        "skill",
        nargs="?",
        metavar="SKILL",
        help="the skill folder, or a library root: every skill under it (a set run)",
    )
    p.add_argument(
        "--model",
        help="agent model: anthropic/<m>, openai/<m> or scripted/<name>; a,b: a cell per model",
    )
    p.add_argument(
        "--agent",
        help=f"what runs in the arms: {', '.join(AGENTS)} (default {DEFAULT_AGENT}; the others "
        "are the real CLI in the sandbox) or an agent an installed package registers "
        "(entry-point group skillbench.agents); a,b: a cell per agent",
    )
    p.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="of a library root, evaluate only these skills (folder or skill names)",
    )
    p.add_argument(
        "--changed-since",
        dest="changed_since",
        metavar="GIT_REF",
        help="of a library root, evaluate only the skills whose files or evals changed since "
        "this git revision (for CI: the base branch)",
    )
    p.add_argument("--judge-model", dest="judge_model", help="judge model (default: --model)")
    p.add_argument(
        "--grader",
        metavar="MODEL",
        help="the `expect` checks' grader (default: the judge model; --resume keeps the run's)",
    )
    p.add_argument(
        "--grader-runs",
        dest="grader_runs",
        type=int,
        choices=(1, 2),
        help="grade each session's expectations twice: a disagreement fails closed "
        "(default 1; --resume keeps the run's)",
    )
    p.add_argument(
        "--evals",
        metavar="FILE",
        action="append",
        help="also run the cases of this evals.json or eval.yaml, wherever it is (repeatable; "
        "--resume keeps the run's)",
    )
    p.add_argument("--k", type=int, help="repetitions of every case (default 1)")
    p.add_argument(
        "--min-net-lift",
        dest="min_net_lift",
        type=float,
        metavar="SHARE",
        help="the net lift over units PASS and FAIL need beyond significance (default 0.2)",
    )
    p.add_argument(
        "--sequential",
        action="store_true",
        default=None,
        help="stop as soon as the verdict is settled (a stopping rule declared in plan.json; "
        "docs/eval.md: sequential stopping)",
    )
    p.add_argument(
        "--parallel", type=int, help="sessions (and trigger calls) at once, at most 64 (default 4)"
    )
    p.add_argument(
        "--max-timeout",
        type=int,
        metavar="MINUTES",
        help="the most a case's agent phase may take, up to 1440 (default: config "
        "`max_timeout`, or 120); a case asking for more is cut there, said",
    )
    p.add_argument(
        "--network",
        choices=("declared", "none"),
        help="declared (default: config `network`): each phase reaches what its case's "
        "`network:` lists, through the logged egress proxy; none: no phase reaches anything",
    )
    p.add_argument("--case", metavar="STEM", help="run one case (or `suite`)")
    p.add_argument("--out", metavar="DIR", help="run folder")
    p.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="continue a run (or a set run's folder); reruns only what is missing",
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
        "--cluster",
        metavar="ADDRESS",
        help="run the sessions on a Ray cluster (what ray.init takes: auto, IP:port, "
        "ray://host:port; default [cluster] address); needs skillbench[ray]",
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
    p.add_argument(
        "--json",
        action="store_true",
        help="print summary.json instead of the report (a set run: every cell's)",
    )
    p.add_argument("--junit", metavar="FILE", help="also write the rows as JUnit XML")
    p.add_argument("--quiet", action="store_true", help="no progress output")
