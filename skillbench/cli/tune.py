"""`tune`: a better description for a skill, chosen on prompts it never trained on (issue 25).
Parses the flags into the tune package's `Request`; `skillbench.tune.command` does the rest."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.cli.common import UsageError, command, err, out, settings_for

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def cmd_tune(args: argparse.Namespace) -> int:
    from skillbench.models import parse_model
    from skillbench.tune.command import Request
    from skillbench.tune.command import command as tune_command
    from skillbench.tune.rounds import TuneOptions
    from skillbench.tune.splits import DEFAULT_FRACTIONS, parse_fractions

    if args.skill is None and args.resume is None:
        raise UsageError("tune needs a SKILL folder (or --resume RUN_DIR)")
    try:
        fractions = parse_fractions(args.split) if args.split else DEFAULT_FRACTIONS
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for flag, value, low in (("--rounds", args.rounds, 1), ("--runs", args.runs, 1)):
        if value is not None and value < low:
            raise UsageError(f"{flag} must be at least {low}")
    if args.threshold is not None and not 0 < args.threshold <= 1:
        raise UsageError("--threshold is a trigger rate in (0, 1]")
    if args.max_cost is not None and args.max_cost < 0:
        raise UsageError("--max-cost is a spend cap in USD: 0 or more")
    start = Path(args.skill or args.resume)
    settings = settings_for(start, args, ("model", "parallel", "agent")).settings
    names = ("method", "proposer_model", "rounds", "runs", "threshold", "seed", "split")
    given = {n for n in names if getattr(args, n) is not None}
    given |= {n for n in ("model", "agent") if getattr(args, n) is not None}
    options = TuneOptions(
        skill_dir=args.skill or "",
        settings=settings,
        method=args.method or "agent",
        proposer_model=args.proposer_model,
        rounds=5 if args.rounds is None else args.rounds,
        runs=3 if args.runs is None else args.runs,
        threshold=0.5 if args.threshold is None else args.threshold,
        fractions=fractions,
        seed=0 if args.seed is None else args.seed,
        max_cost=args.max_cost,
    )
    if args.proposer_model:
        parse_model(args.proposer_model)  # a bad reference is a usage error before any work
    request = Request(
        options=options,
        given=frozenset(given),
        out=args.out,
        resume=args.resume,
        plan=args.plan,
        apply=args.apply,
        json=args.json,
    )
    return tune_command(request, out, err)


def register_tune(sub: Subparsers) -> None:
    p = command(
        sub,
        "tune",
        cmd_tune,
        "improve a skill's description, chosen on prompts it never trained on",
        "Split evals/triggers.yaml (stratified, seeded) into train, validation and test "
        "(evals/triggers.test.yaml, when present, is the test set). Each round a proposer "
        "model sees the SKILL.md body, the sibling skills' descriptions and the train results "
        "only, and writes a new description, measured on train and validation. The best by "
        "validation (ties to the shorter) is measured once on test beside the original. "
        "Everything lands in the run folder (--out, default .skillbench/tune/<run_id>/) with "
        "report.html. SKILL.md is changed only with --apply (its description line, nothing "
        "else). Exit 0 done, 1 stopped at --max-cost (finished rounds kept), 2 bad input, "
        "130 interrupted (143 on SIGTERM, 129 on SIGHUP).",
    )
    p.add_argument("skill", nargs="?", metavar="SKILL", help="the skill folder")
    p.add_argument("--model", help="trigger model: anthropic/<m>, openai/<m> or scripted/<name>")
    p.add_argument(
        "--proposer-model",
        dest="proposer_model",
        help="the model that writes descriptions (default: --model)",
    )
    p.add_argument(
        "--agent", help="whose routing is measured: builtin (default), claude-code, codex"
    )
    p.add_argument(
        "--method",
        choices=["agent", "catalog"],
        help="the agent's own routing with a canary (default), or the catalog call",
    )
    p.add_argument("--rounds", type=int, help="proposals to try at most (default 5)")
    p.add_argument("--runs", type=int, help="routings of each prompt (default 3)")
    p.add_argument(
        "--threshold", type=float, help="trigger rate that counts as fired (default 0.5)"
    )
    p.add_argument(
        "--split", metavar="TRAIN/VAL/TEST", help="shares of the prompts (default 0.5/0.25/0.25)"
    )
    p.add_argument("--seed", type=int, help="seed of the split (default 0)")
    p.add_argument(
        "--max-cost", dest="max_cost", type=float, metavar="USD", help="stop once spend passes this"
    )
    p.add_argument("--parallel", type=int, help="calls or sessions at once, at most 64 (default 4)")
    p.add_argument("--plan", action="store_true", help="print the calls and cost, start nothing")
    p.add_argument(
        "--apply", action="store_true", help="write the chosen description into SKILL.md"
    )
    p.add_argument("--out", metavar="DIR", help="run folder")
    p.add_argument(
        "--resume", metavar="RUN_DIR", help="continue a tuning run (or apply its result)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
