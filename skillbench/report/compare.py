"""`skillbench compare RUN_A RUN_B`: the rows whose outcome changed between two runs (two
versions of a skill, or two models), with both verdicts, in the terminal and as HTML; of two
set runs, the same cell by cell."""

from __future__ import annotations

import html

import msgspec

from skillbench.results.run_folder import RunFolder
from skillbench.results.set_folder import SetFolder

RowKey = tuple[str, int, str]  # case, rep, opponent


class Side(msgspec.Struct, frozen=True):
    run_id: str
    skill: str
    version: str
    verdict: str
    why: str
    model: str
    agent: str


class Change(msgspec.Struct, frozen=True):
    case: str
    rep: int
    opponent: str
    before: str | None  # outcome (decided_by) in A; None: the row is not in A
    after: str | None


class Comparison(msgspec.Struct, frozen=True):
    a: Side
    b: Side
    changed: list[Change]
    same: int  # rows with the same outcome in both


def _side(run: RunFolder) -> Side:
    s = run.summary
    return Side(
        s.run_id,
        s.skill,
        s.version,
        s.verdict,
        s.why,
        s.models.get("agent", ""),
        f"{s.agent} {s.agent_version}".strip(),
    )


def compare_runs(a: RunFolder, b: RunFolder) -> Comparison:
    """Row by row: what changed outcome, and what only one run has."""

    def rows(run: RunFolder) -> dict[RowKey, str]:
        return {
            (r.case, r.rep, r.opponent): f"{r.outcome} ({r.decided_by})" for r in run.summary.rows
        }

    before, after = rows(a), rows(b)
    changed, same = [], 0
    for key in sorted(before.keys() | after.keys()):
        x, y = before.get(key), after.get(key)
        if x is not None and y is not None and x.split()[0] == y.split()[0]:
            same += 1
        else:
            changed.append(Change(key[0], key[1], key[2], x, y))
    return Comparison(_side(a), _side(b), changed, same)


def compare_lines(c: Comparison) -> list[str]:
    """The comparison for the terminal."""
    lines = []
    for label, side in (("A", c.a), ("B", c.b)):
        lines.append(
            f"{label}: run {side.run_id} · {side.skill} {side.version[:19]}… · "
            f"{side.agent} · {side.model} · verdict {side.verdict}"
        )
    lines.append(f"verdict: {c.a.verdict} -> {c.b.verdict}")
    lines.append(f"rows: {len(c.changed)} changed, {c.same} the same")
    for ch in c.changed:
        lines.append(
            f"  {ch.case} #{ch.rep} vs {ch.opponent}: {ch.before or '(not in A)'} -> "
            f"{ch.after or '(not in B)'}"
        )
    return lines


def compare_html(c: Comparison) -> str:
    """The comparison as a self-contained page."""
    e = html.escape
    sides = "".join(
        f"<tr><th>{label}</th><td>{e(s.run_id)}</td><td>{e(s.skill)} {e(s.version[:19])}…</td>"
        f"<td>{e(s.agent)} · {e(s.model)}</td><td class='v'>{e(s.verdict)}</td>"
        f"<td>{e(s.why)}</td></tr>"
        for label, s in (("A", c.a), ("B", c.b))
    )
    rows = "".join(
        f"<tr><td>{e(ch.case)}</td><td>{ch.rep}</td><td>{e(ch.opponent)}</td>"
        f"<td>{e(ch.before or '(not in A)')}</td><td>{e(ch.after or '(not in B)')}</td></tr>"
        for ch in c.changed
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>skillbench compare"
        "</title><style>body{font:14px system-ui,sans-serif;margin:24px}table{border-collapse:"
        "collapse}td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left}"
        ".v{font-weight:600}</style></head><body><h1>skillbench compare</h1>"
        "<table><tr><th></th><th>run</th><th>skill</th><th>agent · model</th><th>verdict</th>"
        f"<th>why</th></tr>{sides}</table>"
        f"<h2>{len(c.changed)} row(s) changed, {c.same} the same</h2>"
        "<table id='changed'><tr><th>case</th><th>rep</th><th>vs</th><th>A</th><th>B</th></tr>"
        f"{rows}</table></body></html>\n"
    )


class CellChange(msgspec.Struct, frozen=True):
    """One cell (skill@agent@model) in two set runs."""

    id: str
    before: str | None  # the verdict in A; None: not in A, or no finished run there
    after: str | None
    lift_before: float | None
    lift_after: float | None
    rows: Comparison | None  # row by row, when both runs have the cell finished


class SetComparison(msgspec.Struct, frozen=True):
    a: str  # the set runs' ids
    b: str
    cells: list[CellChange]


def compare_sets(a: SetFolder, b: SetFolder) -> SetComparison:
    """Cell by cell (matched by id): both verdicts and net lifts, and the rows that changed."""
    from skillbench.report.matrix import cell_line

    left = {c.cell.id: c for c in a.cells}
    right = {c.cell.id: c for c in b.cells}
    cells = []
    for ident in [*left, *(i for i in right if i not in left)]:
        x, y = left.get(ident), right.get(ident)
        lx, ly = (cell_line(c) if c is not None else None for c in (x, y))
        rows = None
        if x is not None and y is not None and x.run is not None and y.run is not None:
            rows = compare_runs(x.run, y.run)
        cells.append(
            CellChange(
                ident,
                lx.verdict if lx else None,
                ly.verdict if ly else None,
                lx.net_lift if lx else None,
                ly.net_lift if ly else None,
                rows,
            )
        )
    return SetComparison(a.run_id, b.run_id, cells)


def _lift(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.0f}%"


def _cell_text(ch: CellChange) -> str:
    shown_a = ch.before or "(none in A)"
    shown_b = ch.after or "(none in B)"
    rows = f" · rows: {len(ch.rows.changed)} changed, {ch.rows.same} the same" if ch.rows else ""
    return (
        f"{ch.id}: {shown_a} -> {shown_b} (net lift {_lift(ch.lift_before)} -> "
        f"{_lift(ch.lift_after)}){rows}"
    )


def set_compare_lines(c: SetComparison) -> list[str]:
    """The comparison of two set runs for the terminal: one line per cell, then the rows of
    each cell whose outcome changed."""
    changed = sum(1 for ch in c.cells if ch.before != ch.after)
    lines = [f"A: set run {c.a}", f"B: set run {c.b}"]
    lines.append(f"cells: {changed} changed verdict, {len(c.cells) - changed} the same")
    for ch in c.cells:
        lines.append(f"  {_cell_text(ch)}")
        for row in ch.rows.changed if ch.rows else []:
            lines.append(
                f"    {row.case} #{row.rep} vs {row.opponent}: {row.before or '(not in A)'} -> "
                f"{row.after or '(not in B)'}"
            )
    return lines


def set_compare_html(c: SetComparison) -> str:
    """The comparison of two set runs as a self-contained page."""
    e = html.escape
    rows = "".join(
        f"<tr data-cell='{e(ch.id)}'><td>{e(ch.id)}</td><td class='v'>{e(ch.before or '-')}</td>"
        f"<td class='v'>{e(ch.after or '-')}</td><td>{_lift(ch.lift_before)}</td>"
        f"<td>{_lift(ch.lift_after)}</td>"
        f"<td>{len(ch.rows.changed) if ch.rows else '-'}</td></tr>"
        for ch in c.cells
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>skillbench compare"
        "</title><style>body{font:14px system-ui,sans-serif;margin:24px}table{border-collapse:"
        "collapse}td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left}"
        ".v{font-weight:600}</style></head><body><h1>skillbench compare</h1>"
        f"<p>A: set run {e(c.a)} · B: set run {e(c.b)}</p>"
        "<table id='cells'><tr><th>cell</th><th>A</th><th>B</th><th>net lift A</th>"
        f"<th>net lift B</th><th>rows changed</th></tr>{rows}</table></body></html>\n"
    )
