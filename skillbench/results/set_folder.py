"""A set run folder read back for the renderers (docs/results.md, "Reading a set run"): its
set.json and, for each cell, the cell's own run folder read as any run folder is
(run_folder.load_run)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from skillbench.results.cellset import Cell, CellSetError, read_set
from skillbench.results.run_folder import RunFolder, RunFolderError, load_run


class CellRun(msgspec.Struct):
    """One cell of a set: what set.json says of it, and its finished run folder if it has one."""

    cell: Cell
    run: RunFolder | None
    problem: str | None = None  # why there is no run to read (refused, failed, unfinished)

    @property
    def verdict(self) -> str | None:
        return self.run.summary.verdict if self.run is not None else None


class SetFolder(msgspec.Struct):
    path: str
    run_id: str
    cells: list[CellRun]

    def cell(self, ident: str) -> CellRun:
        """The cell with this id; CellSetError lists the ids there are."""
        for c in self.cells:
            if c.cell.id == ident:
                return c
        known = ", ".join(c.cell.id for c in self.cells) or "none"
        raise CellSetError(f"--cell {ident}: no such cell in {self.path} (cells: {known})")


def _cell_path(root: Path, cell: Cell) -> Path:
    """The cell's run folder, which must stay inside the set folder once links are followed:
    set.json names it, and a link out would have the report read (and link to) any folder."""
    where = root / cell.run
    if not where.resolve().is_relative_to(root.resolve()):
        raise CellSetError(
            f"{root / 'set.json'}: cell {cell.id!r} has run {cell.run!r}, which leads outside "
            "the set folder"
        )
    return where


def load_set(path: Path) -> SetFolder:
    """Read a set run folder. A cell that was refused, failed or did not finish is kept with
    why (the matrix shows it); a set.json that cannot be read is a CellSetError."""
    cells = read_set(path)
    out = []
    for cell in cells.cells:
        where = _cell_path(path, cell)
        if cell.status in ("refused", "failed"):
            out.append(CellRun(cell, None, f"{cell.status}: {cell.reason or 'no reason given'}"))
            continue
        try:
            out.append(CellRun(cell, load_run(where)))
        except RunFolderError as exc:
            out.append(CellRun(cell, None, f"{cell.status}: {exc}"))
    return SetFolder(str(path), cells.run_id, out)
