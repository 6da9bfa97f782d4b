"""`check`, `digest`, `catalog`: what a skill folder is, without any model or sandbox."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.cli.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, UsageError, command, err, out
from skillbench.evals.kinds import BUILTIN
from skillbench.evals.skills import catalog, catalog_lines, digest, is_skill, read_skill
from skillbench.validate import NotASkill, check_skill, skills_at

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def cmd_check(args: argparse.Namespace) -> int:
    status = EXIT_OK
    checked = errors = warnings = 0
    extra = [Path(e) for e in args.evals]
    if extra and len(args.paths) != 1:
        raise UsageError("--evals FILE goes with one skill folder")
    for raw in args.paths:
        try:
            folders = skills_at(Path(raw))
        except NotASkill as exc:
            err(f"error: {exc}")
            status = EXIT_USAGE
            continue
        for folder in folders:
            result = check_skill(folder, extra)
            checked += 1
            errors += result.errors
            warnings += result.warnings
            for problem in result.problems:
                out(str(problem))
    out(
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
    out(digest(folder))
    return EXIT_OK


def cmd_catalog(args: argparse.Namespace) -> int:
    path = Path(args.root)
    if is_skill(path):  # a skill: show the catalog of the library root that holds it
        lines = catalog_lines(catalog(path.resolve().parent, include=read_skill(path)))
    else:
        skills_at(path)
        lines = catalog_lines(catalog(path))
    for line in lines:
        out(line)
    return EXIT_OK


def register_check(sub: Subparsers) -> None:
    p = command(
        sub,
        "check",
        cmd_check,
        "validate skills and their eval assets (no model calls)",
        "Validate SKILL.md, the skill's files and its eval assets (evals/cases/*.yaml, "
        "evals/suite.yaml, evals/triggers.yaml, and the other tools' files skillbench reads "
        "where they stand: evals/evals.json, trigger JSON, eval.yaml). Every problem is one line "
        "`path:line: severity: message`. Exit 0 when clean or only warnings, 1 when errors "
        "were found, 2 when a path is neither a skill nor a library root. Check kinds: "
        f"{', '.join(BUILTIN)}, and those of installed packages (docs/formats.md).",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a skill folder or a library root")
    p.add_argument(
        "--evals",
        metavar="FILE",
        action="append",
        default=[],
        help="also read this evals.json or eval.yaml, wherever it is (one skill only)",
    )


def register_digest(sub: Subparsers) -> None:
    p = command(
        sub,
        "digest",
        cmd_digest,
        "print a skill's version digest",
        "Print the skill's content digest (sha256:<hex>): its version identity. It covers "
        "every file except the top-level evals/, .git and OS litter, so editing evals never "
        "changes the version.",
    )
    p.add_argument("skill", metavar="SKILL", help="a skill folder")


def register_catalog(sub: Subparsers) -> None:
    p = command(
        sub,
        "catalog",
        cmd_catalog,
        "print the catalog a trigger call shows",
        "Print one `- name: description` line per skill of a library root, sorted by name: "
        "exactly what a trigger call shows the model. Given a skill, show the catalog of the "
        "library root that holds it.",
    )
    p.add_argument("root", metavar="ROOT", help="a library root (or a skill inside one)")
