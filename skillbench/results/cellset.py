"""A set run: several skills (a library) and/or several agents × models (a matrix) evaluated in
one run folder. Each cell is one complete paired eval of one skill in one agent with one model,
kept as an ordinary run folder under `cells/`, so every reader of a run folder reads a cell as it
is; `set.json` lists the cells (docs/results.md, "Set runs")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import msgspec

from skillbench.errors import SkillbenchError
from skillbench.util.inputs import InputError, load_json

SET_FILE = "set.json"
CELLS_DIR = "cells"

CellStatus = Literal["pending", "done", "refused", "failed"]


class CellSetError(SkillbenchError):
    """Not a readable set run folder."""


class Cell(msgspec.Struct, forbid_unknown_fields=False):
    id: str  # "<skill>@<agent>@<model>", unique in the set; `cell_dir` maps it to a folder
    skill: str  # the skill's name
    skill_path: str  # the skill folder as given (relative to where the run started, or absolute)
    agent: str
    model: str
    run: str  # the cell's run folder, relative to the set folder ("cells/<slug>")
    status: CellStatus = "pending"
    reason: str | None = None  # why a cell was refused or failed, one line


class CellSet(msgspec.Struct, forbid_unknown_fields=False):
    run_id: str
    cells: list[Cell]
    kind: Literal["set"] = "set"
    version: int = 1


def cell_id(skill: str, agent: str, model: str) -> str:
    return f"{skill}@{agent}@{model}"


def cell_dir(skill: str, agent: str, model: str) -> str:
    """A folder name for a cell that is safe on every file system and distinct per cell."""
    slug = "--".join(re.sub(r"[^A-Za-z0-9._-]+", "_", part) for part in (skill, agent, model))
    return f"{CELLS_DIR}/{slug}"


def is_set_run(path: Path) -> bool:
    return (path / SET_FILE).is_file()


def read_set(path: Path) -> CellSet:
    """The set.json of a set run folder; CellSetError names the file and what to do."""
    try:
        cells = load_json(path / SET_FILE, CellSet)
    except (OSError, InputError) as exc:
        raise CellSetError(f"{path / SET_FILE}: not a readable set run ({exc})") from None
    seen: set[str] = set()
    for cell in cells.cells:
        if cell.id in seen:
            raise CellSetError(f"{path / SET_FILE}: cell {cell.id!r} appears twice")
        seen.add(cell.id)
        run = Path(cell.run)
        if run.is_absolute() or ".." in run.parts:
            raise CellSetError(
                f"{path / SET_FILE}: cell {cell.id!r} has run {cell.run!r} outside the set folder"
            )
    return cells


def write_set(path: Path, cells: CellSet) -> None:
    """Write set.json atomically (a crash leaves the old one or the new one, never half)."""
    tmp = path / (SET_FILE + ".tmp")
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(cells)))
    tmp.replace(path / SET_FILE)
