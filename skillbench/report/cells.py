"""The terminal table of a set run (docs/results.md, "Set runs"): one line per cell, read from
each cell's summary, so it matches the cells' summary.json."""

from __future__ import annotations

from skillbench.engine.summary import Summary
from skillbench.setrun import CellResult, SetResult

HEAD = ("skill", "agent", "model", "verdict", "net lift [95% CI]", "decided", "activation", "cost")


def _lift(summary: Summary) -> str:
    opponent = next(iter(summary.comparisons), None)
    if opponent is None or summary.comparisons[opponent].net_lift is None:
        return "n/a"
    lift = summary.comparisons[opponent].net_lift
    stats = summary.stats.get(opponent)
    ci = stats.net_lift_ci if stats is not None else None
    span = f" [{ci.low * 100:+.0f}, {ci.high * 100:+.0f}]" if ci is not None else ""
    return f"{(lift or 0.0) * 100:+.0f}%{span}"


def _decided(summary: Summary) -> str:
    opponent = next(iter(summary.comparisons), None)
    if opponent is None:
        return "n/a"
    units = summary.comparisons[opponent].units
    return f"{units.decided}/{units.total}"


def _activation(summary: Summary) -> str:
    a = summary.activation
    if a is None or not a.sessions:
        return "n/a"
    return f"{a.fired}/{a.sessions} ({a.fired / a.sessions:.0%})"


def cell_row(item: CellResult) -> tuple[str, ...]:
    cell = item.cell
    if item.result is None:
        what = "REFUSED" if cell.status == "refused" else cell.status.upper()
        return (cell.skill, cell.agent, cell.model, what, "", "", "", "")
    s = item.result.summary
    return (
        cell.skill,
        cell.agent,
        cell.model,
        s.verdict,
        _lift(s),
        _decided(s),
        _activation(s),
        f"${s.spend_usd:.2f}",
    )


def cell_lines(result: SetResult) -> list[str]:
    """The table, then why each refused or failed cell did not run, then the set folder."""
    rows = [HEAD, *(cell_row(c) for c in result.cells)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for item in result.cells:
        if item.result is None and item.cell.reason:
            lines.append(f"{item.cell.id}: {item.cell.status}: {item.cell.reason}")
    lines.append(f"spend: ${result.spend_usd:.2f} across {len(result.cells)} cell(s)")
    lines.append(f"set: {result.set_dir}")
    return lines
