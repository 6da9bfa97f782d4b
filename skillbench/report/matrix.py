"""The matrix report of a set run (docs/results.md, "Reading a set run"): one line per cell
(verdict, net lift with its interval, decided units, activation rate, cost), the line that says
where each skill helps, and the cells whose split differs from their skill's other cells
(docs/statistics.md, "Where the skill helps"); for the terminal, JSON, markdown, JUnit and an
HTML grid."""

from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import msgspec

from skillbench.results.set_folder import CellRun, SetFolder, load_set
from skillbench.results.stats import heterogeneity
from skillbench.util.scrub import printable

_ORDER = ("PASS", "NEUTRAL", "INCONCLUSIVE", "FAIL", "NONE")


class CellLine(msgspec.Struct, kw_only=True):
    """What the matrix shows of one cell."""

    id: str
    skill: str
    agent: str
    model: str
    status: str  # done, or why there is no verdict: refused, failed, pending
    verdict: str | None  # None: the cell has no finished run
    net_lift: float | None = None  # against the first opponent, over units
    low: float | None = None  # its 95 % interval
    high: float | None = None
    decided: int = 0  # units won plus units lost
    units: int = 0  # units scored
    wins: int = 0  # decided units the candidate won
    activation: float | None = (
        None  # candidate sessions that loaded the skill, of those expected to
    )
    cost_usd: float = 0.0
    report: str  # the cell's report.html, relative to the set folder
    differs_p: float | None = None  # flagged: the Holm-adjusted p that its split differs
    problem: str | None = None

    @property
    def differs(self) -> bool:
        return self.differs_p is not None


def cell_line(c: CellRun) -> CellLine:
    cell = c.cell
    line = CellLine(
        id=cell.id,
        skill=cell.skill,
        agent=cell.agent,
        model=cell.model,
        status=cell.status if c.run is None else "done",
        verdict=c.verdict,
        report=f"{cell.run}/report.html",
        problem=c.problem,
    )
    if c.run is None:
        return line
    s = c.run.summary
    opponent = c.run.plan.opponents[0] if c.run.plan.opponents else next(iter(s.comparisons), "")
    comparison, stats = s.comparisons.get(opponent), s.stats.get(opponent)
    if comparison is not None:
        line.net_lift = comparison.net_lift
        line.decided, line.units = comparison.units.decided, comparison.units.total
        line.wins = comparison.units.win
    if stats is not None and stats.net_lift_ci is not None:
        line.low, line.high = stats.net_lift_ci.low, stats.net_lift_ci.high
    a = s.activation
    if a is not None and a.sessions:
        line.activation = a.fired / a.sessions
    line.cost_usd = s.spend_usd
    return line


def matrix(folder: SetFolder) -> list[CellLine]:
    """Every cell's line, with the heterogeneity test run over each skill's cells."""
    lines = [cell_line(c) for c in folder.cells]
    for skill in dict.fromkeys(line.skill for line in lines):
        group = [line for line in lines if line.skill == skill and line.decided]
        if len(group) < 2:
            continue
        ps = heterogeneity([(line.wins, line.decided - line.wins) for line in group])
        for line, p in zip(group, ps, strict=True):
            line.differs_p = p
    return lines


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def where_lines(lines: list[CellLine]) -> list[str]:
    """Per skill, where it helps and where it does not: `greeter: PASS on claude-sonnet in
    claude-code and codex; NEUTRAL on claude-haiku in claude-code`. The agent (or the model) is
    left out when the whole set has only one."""
    agents = {line.agent for line in lines}
    models = {line.model for line in lines}
    skills = list(dict.fromkeys(line.skill for line in lines))
    out = []
    for skill in skills:
        parts = []
        mine = [line for line in lines if line.skill == skill]
        verdicts = {_verdict(line) for line in mine}
        for verdict in sorted(verdicts, key=lambda v: (*_ORDER, v).index(v)):
            cells = [line for line in mine if _verdict(line) == verdict]
            by_model: dict[str, list[str]] = {}
            for line in cells:
                by_model.setdefault(line.model, []).append(line.agent)
            if len(agents) > 1:
                on = " on {}" if len(models) > 1 else ""
                places = [on.format(m) + f" in {_and(a)}" for m, a in by_model.items()]
            else:  # one agent: the models are the places
                places = [f" on {_and(list(by_model))}"] if len(models) > 1 else []
            parts.append(verdict + ",".join(places))
        said = "; ".join(parts)
        out.append(f"{skill}: {said}" if len(skills) > 1 else said)
    return out


def differs_lines(lines: list[CellLine]) -> list[str]:
    """The cells whose split of decided units differs from their skill's other cells."""
    out = []
    for line in lines:
        if line.differs:
            assert line.differs_p is not None
            out.append(
                f"{line.id}: {line.wins}W/{line.decided - line.wins}L of {line.decided} decided "
                f"units differs from the skill's other cells (Fisher exact, Holm-adjusted "
                f"p={line.differs_p:.3f})"
            )
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.0f}%"


def lift_text(line: CellLine) -> str:
    if line.net_lift is None:
        return "n/a"
    interval = f" [{_pct(line.low)}, {_pct(line.high)}]" if line.low is not None else ""
    return _pct(line.net_lift) + interval


def _activation(line: CellLine) -> str:
    return "n/a" if line.activation is None else f"{line.activation:.0%}"


def _verdict(line: CellLine) -> str:
    return line.verdict or line.status.upper()


def terminal(folder: SetFolder) -> str:
    lines = matrix(folder)
    width = max([len(line.id) for line in lines] + [4])
    out = [
        f"set run {folder.run_id}: {len(lines)} cell{'s' * (len(lines) != 1)}",
        f"{'cell':<{width}}  {'verdict':<12}  {'net lift [95% CI]':<22}  {'decided':<9}  "
        f"{'activation':<10}  cost",
    ]
    for line in lines:
        decided = f"{line.decided}/{line.units}" if line.verdict else "-"
        flag = "  *differs*" if line.differs else ""
        out.append(
            f"{line.id:<{width}}  {_verdict(line):<12}  {lift_text(line):<22}  {decided:<9}  "
            f"{_activation(line):<10}  ${line.cost_usd:.2f}{flag}"
        )
    out += [f"where: {w}" for w in where_lines(lines)]
    out += [f"differs: {d}" for d in differs_lines(lines)]
    out += [f"{line.id}: {line.problem}" for line in lines if line.problem]
    out.append(f"a cell's own report: skillbench report {folder.path} --cell CELL")
    # a line may carry text from a set.json or a model: scrubbed and escaped
    return "".join(printable(line) + "\n" for line in out)


def as_json(folder: SetFolder) -> str:
    """Every cell: its line and its whole summary (summary.json), and the where lines."""
    lines = matrix(folder)
    cells = []
    for line, c in zip(lines, folder.cells, strict=True):
        entry = msgspec.to_builtins(line)
        entry["differs"] = line.differs
        entry["run"] = c.cell.run
        entry["summary"] = msgspec.to_builtins(c.run.summary) if c.run is not None else None
        cells.append(entry)
    data = {"kind": "set", "run_id": folder.run_id, "where": where_lines(lines), "cells": cells}
    return json.dumps(data, indent=2) + "\n"


def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(folder: SetFolder) -> str:
    """A pull-request comment: the table of cells, where the skill helps, what differs."""
    lines = matrix(folder)
    out = [f"### skillbench: {len(lines)} cell{'s' * (len(lines) != 1)}", ""]
    out += [f"**Where:** {_md(w)}  " for w in where_lines(lines)]
    out += [
        "",
        "| skill | agent | model | verdict | net lift [95% CI] | decided units | activation | "
        "cost |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for line in lines:
        verdict = _verdict(line)
        shown = f"**{verdict}**" if verdict in ("FAIL", "FAILED", "REFUSED") else verdict
        shown += " (differs)" if line.differs else ""
        decided = f"{line.decided} of {line.units}" if line.verdict else "-"
        out.append(
            f"| {_md(line.skill)} | {_md(line.agent)} | {_md(line.model)} | {shown} | "
            f"{lift_text(line)} | {decided} | {_activation(line)} | ${line.cost_usd:.2f} |"
        )
    differs = differs_lines(lines)
    if differs:
        out += ["", "Cells that differ from their skill's others:", ""]
        out += [f"- {_md(d)}" for d in differs]
    problems = [line for line in lines if line.problem]
    if problems:
        out += ["", "Cells without a verdict:", ""]
        out += [f"- `{_md(line.id)}`: {_md(line.problem)}" for line in problems]
    out += ["", f"<sub>set run {_md(folder.run_id)}</sub>", ""]
    return "\n".join(out)


def junit(folder: SetFolder) -> str:
    """One test case per cell: a FAIL verdict fails it, a cell that failed to run (or whose
    run cannot be read) is an error, a refused or pending one is skipped."""
    cases, failures, errors, skipped = [], 0, 0, 0
    for line in matrix(folder):
        cls = quoteattr(f"skillbench.eval.{line.skill}")
        name = quoteattr(f"{line.agent} / {line.model}")
        detail = (
            f"{_verdict(line)}: net lift {lift_text(line)}, {line.decided} of {line.units} "
            "units decided"
        )
        if line.verdict == "FAIL":
            failures += 1
            body = f"<failure message={quoteattr(detail)}/>"
        elif line.verdict is None and line.status in ("failed", "done"):
            errors += 1  # it failed, or says it is done and its run cannot be read
            body = f"<error message={quoteattr(line.problem or 'failed')}/>"
        elif line.verdict is None:
            skipped += 1
            body = f"<skipped message={quoteattr(line.problem or line.status)}/>"
        else:
            body = ""
        cases.append(
            f"<testcase classname={cls} name={name}>{body}<system-out>{escape(detail)}"
            "</system-out></testcase>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuite name={quoteattr(f"skillbench set {folder.run_id}")} tests="{len(cases)}" '
        f'failures="{failures}" errors="{errors}" skipped="{skipped}">\n'
        + "".join(f"  {c}\n" for c in cases)
        + "</testsuite>\n"
    )


_HUE = {"PASS": "46,160,67", "FAIL": "207,34,46", "NEUTRAL": "110,119,129"}


def _shade(line: CellLine) -> str:
    """A cell's background: its verdict's colour, stronger as its net lift is larger."""
    rgb = _HUE.get(line.verdict or "", "191,135,0")
    strength = 0.25 + 0.6 * min(1.0, abs(line.net_lift or 0.0))
    return f"background:rgba({rgb},{strength:.2f})"


def html(folder: SetFolder) -> str:
    """The grid: a row per skill, a column per agent · model, each cell coloured by verdict
    and lift and linking to its own report.html (relative to the set folder)."""
    from skillbench.report.html import _e, page

    lines = matrix(folder)
    columns = list(dict.fromkeys((line.agent, line.model) for line in lines))
    skills = list(dict.fromkeys(line.skill for line in lines))
    at = {(line.skill, line.agent, line.model): line for line in lines}
    head = "".join(f"<th>{_e(agent)}<br>{_e(model)}</th>" for agent, model in columns)
    body = []
    for skill in skills:
        tds = []
        for agent, model in columns:
            line = at.get((skill, agent, model))
            if line is None:
                tds.append("<td class='empty'>-</td>")
                continue
            mark = " <span class='differs' title='differs from the other cells'>◆</span>"
            tds.append(
                f"<td class='cell' data-cell='{_e(line.id)}' data-verdict='{_e(_verdict(line))}' "
                f"style='{_shade(line)}'><a href='{_e(line.report)}'>"
                f"<b>{_e(_verdict(line))}</b>{mark * line.differs}<br>{_e(lift_text(line))}<br>"
                f"<small>{line.decided} of {line.units} decided · {_e(_activation(line))} "
                f"active · ${line.cost_usd:.2f}</small></a></td>"
            )
        body.append(f"<tr><th>{_e(skill)}</th>{''.join(tds)}</tr>")
    notes = "".join(f"<li>{_e(w)}</li>" for w in where_lines(lines))
    notes += "".join(f"<li class='differs'>{_e(d)}</li>" for d in differs_lines(lines))
    notes += "".join(
        f"<li>{_e(line.id)}: {_e(line.problem)}</li>" for line in lines if line.problem
    )
    style = (
        "<style>#grid{border-collapse:collapse}#grid td,#grid th{border:1px solid #ccc;"
        "padding:8px;text-align:center}#grid td a{color:inherit;text-decoration:none;"
        "display:block}</style>"
    )
    return page(
        f"skillbench set {folder.run_id}",
        f"{style}<header><h1>skillbench set {_e(folder.run_id)}</h1></header>"
        f"<section><table id='grid'><tr><th>skill</th>{head}</tr>{''.join(body)}</table>"
        f"<ul id='where'>{notes}</ul></section>",
    )


def write_set_report(set_dir: Path) -> Path:
    """Build the grid as `report.html` in a set run folder (beside `set.json`, so each cell's
    link opens its report.html from file://); returns its path."""
    path = set_dir / "report.html"
    path.write_text(html(load_set(set_dir)), encoding="utf-8")
    return path


FORMATS = {
    "terminal": terminal,
    "json": as_json,
    "junit": junit,
    "markdown": markdown,
    "html": html,
}
