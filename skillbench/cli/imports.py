"""`import`: eval suites in other formats (Harbor, Margin, skill-optimizer) as native evals."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.cli.common import EXIT_FAIL, EXIT_OK, UsageError, command, out
from skillbench.skills import is_skill

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


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
    out(
        f"{verb} {len(result.cases)} case(s) from {result.source} into {where}: "
        f"{', '.join(result.cases)}"
    )
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


def register_import(sub: Subparsers) -> None:
    p = command(
        sub,
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
