"""One `skillbench import`: read the source in its format, check what it becomes against the
skill (an empty scratch skill when there is none: `import --check` alone), and write it into
the skill's evals/ unless only checking."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import msgspec

from skillbench.evals import Problem
from skillbench.evals.skills import is_skill
from skillbench.importers.base import Imported, ImportError_, check_import, write_import
from skillbench.importers.formats import importers


class ImportRun(msgspec.Struct):
    imported: Imported
    problems: list[Problem]  # what loading the imported evals in the skill found
    written: list[str]  # the files written (none when only checking)


def run_import(format: str, src: Path, into: Path | None, *, check: bool) -> ImportRun:
    """Import `src` (a `format` source) into the skill `into`; with `check`, write nothing.
    ImportError_ names what is wrong."""
    skill = into if into is not None else _scratch_skill()
    try:
        if not is_skill(skill):
            raise ImportError_(f"--into {skill}: not a skill folder (no SKILL.md)")
        result = importers()[format](src, into)
        problems = check_import(result, skill)
        written = [] if check else write_import(result, skill)
    finally:
        if into is None:
            shutil.rmtree(skill.parent, ignore_errors=True)
    return ImportRun(result, problems, written)


def _scratch_skill() -> Path:
    """An empty skill to validate an import against (`import --check` without --into)."""
    folder = Path(tempfile.mkdtemp(prefix="skillbench-import-")) / "imported"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: imported\ndescription: A scratch skill that "
        "holds an import being checked.\n---\n"
    )
    return folder
