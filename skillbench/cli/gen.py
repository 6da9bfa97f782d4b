"""`gen`: write the evals a skill lacks with the model (and the step `eval` runs first)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.cli.common import EXIT_OK, UsageError, command, err, settings_for
from skillbench.skills import is_skill

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers
    from skillbench.config import Settings


def generate(skill_dir: Path, settings: Settings, kinds: list[str], only_missing: bool) -> float:
    from skillbench.engine.gen import generate_missing
    from skillbench.engine.plan import EvalError

    if not is_skill(skill_dir):
        raise UsageError(f"{skill_dir}: not a skill folder (no SKILL.md)")
    try:
        return generate_missing(skill_dir, settings, kinds, err, only_missing=only_missing)
    except EvalError as exc:
        raise UsageError(str(exc)) from None


def cmd_gen(args: argparse.Namespace) -> int:
    loaded = settings_for(Path(args.skill), args, ("model",))
    kinds = [args.kind] if args.kind else ["cases", "triggers"]
    generate(Path(args.skill), loaded.settings, kinds, only_missing=False)
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
