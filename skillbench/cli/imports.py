"""`import`: eval suites in other formats (Harbor, Margin, skill-optimizer) as native evals."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.cli.common import EXIT_FAIL, EXIT_OK, UsageError, command, out
from skillbench.plugins import Names

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def cmd_import(args: argparse.Namespace) -> int:
    from skillbench.importers import ImportError_
    from skillbench.importers.run import run_import

    src = Path(args.src)
    if not src.exists():
        raise UsageError(f"{src}: no such file or folder")
    if args.into is None and not args.check:
        raise UsageError("import needs --into SKILL (or --check alone, to validate the source)")
    try:
        done = run_import(
            args.format, src, Path(args.into) if args.into else None, check=args.check
        )
    except ImportError_ as exc:
        raise UsageError(str(exc)) from None
    result, problems, written = done.imported, done.problems, done.written
    verb = "would import" if args.check else "imported"
    where = f"{Path(args.into)}/evals" if args.into else "a scratch skill"
    out(
        f"{verb} {len(result.cases)} case(s) from {result.source} into {where}: "
        f"{', '.join(result.cases)}"
    )
    if result.skipped:
        out(f"{len(result.cases)} imported, {len(result.skipped)} skipped:")
        for note in result.skipped:
            out(f"  {note}")
    for note in result.warnings:
        out(f"warning: {note}")
    if result.mapped:
        out(f"mapped ({len(result.mapped)}):")
        for note in result.mapped:
            out(f"  {note}")
    if result.unmapped:
        out(f"not mapped ({len(result.unmapped)}):")
        for note in result.unmapped:
            out(f"  {note}")
    for problem in problems:
        out(str(problem))
    errors = [p for p in problems if p.severity == "error"]
    if args.check:
        out(
            "check: the imported evals load cleanly (nothing written: --check)"
            if not errors
            else f"check: {len(errors)} error(s) (nothing written: --check)"
        )
    else:
        out(f"wrote {len(written)} file(s); each says where it came from in its first lines")
    return EXIT_FAIL if errors else EXIT_OK


def _importers() -> dict[str, object]:
    from skillbench.importers.formats import importers  # (imported when asked: its modules)

    return dict(importers())


def register_import(sub: Subparsers) -> None:
    p = command(
        sub,
        "import",
        cmd_import,
        "turn eval suites in other formats into native evals",
        "Write native cases (with their verifier, reward or grader scripts and support files) "
        "into the skill's evals/ from a Harbor task or dataset, a Margin Eval suite, a "
        "skill-optimizer suite, skill-creator's evals.json, or a Vally or Skillgrade eval.yaml "
        "(the last three are also read where they stand, with no import). Each file is headed "
        "with where it came from; nothing existing is overwritten; every source field that "
        "could not be mapped is listed with why. "
        "--check imports into a scratch copy and validates it, writing nothing.",
    )
    p.add_argument(
        "format",
        choices=Names(_importers),
        help="the source's format (installed packages may add formats)",
    )
    p.add_argument("src", metavar="SRC", help="the task, dataset, suite folder or suite file")
    p.add_argument(
        "--into",
        metavar="SKILL",
        help="the skill to add evals to (with --check alone: an empty one)",
    )
    p.add_argument("--check", action="store_true", help="validate only; write nothing")
