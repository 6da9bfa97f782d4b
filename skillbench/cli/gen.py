"""`gen`: write the evals a skill lacks with the model."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from skillbench import api
from skillbench.cli.common import EXIT_OK, command, err

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def cmd_gen(args: argparse.Namespace) -> int:
    kinds = [args.kind] if args.kind else ["cases", "triggers"]
    api.generate_evals(args.skill, kinds=kinds, options=api.Options(model=args.model), log=err)
    return EXIT_OK


def register_gen(sub: Subparsers) -> None:
    p = command(
        sub,
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
