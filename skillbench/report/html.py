"""`report.html` (docs/results.md): the review artifact of one run, built from the run folder alone.

One self-contained page (inline CSS and JS, nothing fetched, opens from file://): the verdict
and why, stats and diagnostics; the rows with regressions first, then wins, then ties, each
opening to its arms side by side with their transcripts, checks and the judge's reasons; the
triggers per prompt with a confusion grid; efficiency per arm as small bar charts.

Everything the agent wrote is data, never markup: it is embedded as JSON in
`<script type="application/json">` blocks (with `<` escaped, so no transcript can close the
block) and put on the page with textContent only. Each transcript has its own block and is
parsed and drawn only when its row is opened, so a 500-row run stays fast.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import msgspec

from skillbench.report.evidence import evidence_lines
from skillbench.report.terminal import accounting_lines, models_line, report_lines
from skillbench.results.records import CANDIDATE, RowRecord
from skillbench.results.run_folder import RunFolder, load_run
from skillbench.results.transcript import LONE_SURROGATE

FILES = Path(__file__).parent / "files"  # the page's CSS and JS
EVENT_TEXT_CAP = 20_000  # characters of one transcript event's text kept in the page
EVENTS_CAP = 400  # events of one transcript kept in the page
_ORDER = {"loss": 0, "win": 1, "tie": 2, "unscored": 3}


def write_report(run_dir: Path) -> Path:
    """Build `report.html` in a finished run folder; returns its path."""
    path = run_dir / "report.html"
    path.write_text(render(load_run(run_dir)), encoding="utf-8")
    return path


def _json_block(ident: str, value: Any) -> str:
    # "<" as \u003c: no "</script>" (or "<!--") in the data can end the block early
    text = json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")
    text = LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)  # (no UTF-8 for them)
    return f'<script type="application/json" id="{ident}">{text}</script>'


def _row_order(row: RowRecord) -> tuple[int, int, str, int]:
    return (_ORDER.get(row.outcome, 3), 0 if row.scored else 1, row.case, row.rep)


def _capped(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for event in events[:EVENTS_CAP]:
        event = dict(event)
        text = event.get("text")
        if isinstance(text, str) and len(text) > EVENT_TEXT_CAP:
            event["text"] = (
                text[:EVENT_TEXT_CAP] + f"\n[… {len(text) - EVENT_TEXT_CAP} more "
                "characters in the run folder's transcript]"
            )
        out.append(event)
    if len(events) > EVENTS_CAP:
        out.append(
            {
                "type": "note",
                "text": f"[{len(events) - EVENTS_CAP} more events in the run folder's transcript]",
            }
        )
    return out


def render(run: RunFolder) -> str:
    """The page for a run folder."""
    s, plan = run.summary, run.plan
    rows = sorted(run.rows, key=_row_order)
    units = {u.name: u.session for u in plan.units}
    transcripts: dict[str, int] = {}  # session key -> index of its data block
    blocks: list[str] = []
    for key, record in sorted(run.sessions.items()):
        transcripts[key] = len(blocks)
        blocks.append(_json_block(f"t{len(blocks)}", _capped(run.transcript(record))))
    data = {
        "arms": plan.arms,
        "units": units,
        "rows": [{**msgspec.to_builtins(r), "scored": r.scored} for r in rows],
        "sessions": {
            k: {**msgspec.to_builtins(r), "block": transcripts[k]} for k, r in run.sessions.items()
        },
    }
    title = f"{s.skill} — {s.verdict}"
    body = [
        f"<header><h1>{_e(s.skill)} <span class='verdict v-{_e(s.verdict)}'>{_e(s.verdict)}"
        f"</span></h1><p class='why'>{_e(s.why)}</p>"
        f"<p class='meta'>version {_e(s.version[:19])}… · run {_e(s.run_id)} · agent "
        f"{_e(s.agent)} {_e(s.agent_version)} · model {_e(s.models.get('agent', ''))} · judge "
        f"{_e(s.models.get('judge', ''))}"
        f"{' · scripted driver: a fixed script, not a model' if s.driver == 'scripted' else ''}"
        "</p></header>",
        _section("Report", "<pre class='terminal'>" + _e("\n".join(report_lines(s))) + "</pre>"),
        _stats(run),
        _activation(run),
        _diagnostics(run),
        _section(f"Rows ({len(rows)})", _rows_shell(rows)),
        _triggers(s.triggers),
        _efficiency(run),
    ]
    return _page(
        _e(title),
        "\n".join(b for b in body if b),
        _json_block("data", data) + "\n" + "\n".join(blocks),
        (FILES / "report.js").read_text(),
    )


def _page(title: str, body: str, data: str, js: str) -> str:
    parts = {
        "TITLE": title,
        "CSS": (FILES / "report.css").read_text(),
        "BODY": body,
        "DATA": data,
        "JS": js,
    }
    # One pass over the template alone (not str.format: the CSS and JS are full of braces):
    # a placeholder written in the data, such as a check's `@@JS@@`, is never filled in.
    return _SLOT.sub(lambda m: parts[m.group(1)], _PAGE)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _section(title: str, inner: str, ident: str = "") -> str:
    anchor = f" id='{ident}'" if ident else ""
    return f"<section{anchor}><h2>{_e(title)}</h2>{inner}</section>"


def _stats(run: RunFolder) -> str:
    s = run.summary
    cards = []
    for opponent, c in s.comparisons.items():
        st = s.stats.get(opponent)
        ci = ""
        if st is not None and st.net_lift_ci is not None:
            ci = f" (95 % CI {st.net_lift_ci.low:+.0%} … {st.net_lift_ci.high:+.0%})"
        power = ""
        if st is not None:
            needed = "more than 200" if st.needed is None else str(st.needed)
            power = (
                f"<p>{st.decided} decided units, {needed} needed for p ≤ 0.05"
                f"{' — underpowered' if st.underpowered else ''}</p>"
            )
        lift = "n/a" if c.net_lift is None else f"{c.net_lift:+.0%}"
        u = c.units
        cards.append(
            f"<div class='card'><h3>candidate vs {_e(opponent)}: {_e(c.verdict)}</h3>"
            f"<p class='big'>{lift}{_e(ci)}</p><p>{c.win}W / {c.loss}L / {c.tie}T rows · "
            f"{u.decided} of {u.total} units decided ({u.win}W / {u.loss}L) · "
            f"sign test p={c.sign_p:.3f}</p>{power}</div>"
        )
    first = next(iter(s.stats.values()), None)
    if first is not None:
        rates = " · ".join(
            f"{_e(arm)} {iv.value:.0%} [{iv.low:.0%}, {iv.high:.0%}]"
            for arm, iv in first.pass_rate.items()
            if iv is not None
        )
        cards.append(
            f"<div class='card'><h3>pass rate (95 %, resampled by unit)</h3><p>{rates}</p></div>"
        )
    if s.noise_floor is not None and s.noise_floor.flip_rate is not None:
        n = s.noise_floor
        cards.append(
            f"<div class='card'><h3>noise floor (A/A)</h3><p class='big'>"
            f"{n.flip_rate:.0%}</p><p>{n.flips} of {n.compared} flip</p>"
            "</div>"
        )
    return _section("Stats", "<div class='cards'>" + "".join(cards) + "</div>")


def _activation(run: RunFolder) -> str:
    """Whether the skill loaded, case by case, under the library, activation and ambient
    lines of the report."""
    s = run.summary
    lines = "".join(f"<p>{_e(line.strip())}</p>" for line in evidence_lines(s))
    cases = s.activation.cases if s.activation is not None else []
    if not lines and not cases:
        return ""
    rows = "".join(
        f"<tr class='{'ok' if (c.fired == c.sessions) == c.expected else 'bad'}'>"
        f"<td>{_e(c.case)}</td><td>{c.fired} of {c.sessions}</td>"
        f"<td>{'yes' if c.expected else 'no (expect_activation: false)'}</td></tr>"
        for c in cases
    )
    table = (
        "<table class='prompts'><thead><tr><th>case</th><th>skill loaded in</th>"
        f"<th>should load</th></tr></thead><tbody>{rows}</tbody></table>"
        if cases
        else ""
    )
    return _section("Activation", lines + table)


def _diagnostics(run: RunFolder) -> str:
    if not run.summary.diagnostics:
        return ""
    items = []
    for d in run.summary.diagnostics:
        what = " · ".join(_e(x) for x in (d.case, d.check) if x)
        items.append(f"<li><b>{_e(d.kind)}</b> {what} — {_e(d.detail)}</li>")
    return _section("Diagnostics (the eval itself)", "<ul class='diag'>" + "".join(items) + "</ul>")


def _rows_shell(rows: list[RowRecord]) -> str:
    counts = {k: sum(r.outcome == k for r in rows) for k in ("loss", "win", "tie", "unscored")}
    buttons = "".join(
        f"<button data-filter='{k}'>{label} ({n})</button>"
        for k, label, n in (
            ("all", "all", len(rows)),
            ("loss", "losses", counts["loss"]),
            ("win", "wins", counts["win"]),
            ("tie", "ties", counts["tie"]),
            ("unscored", "unscored", counts["unscored"]),
        )
    )
    return (
        f"<div class='filters'>{buttons}</div><table id='rows'><thead><tr><th>case</th>"
        "<th>rep</th><th>vs</th><th>outcome</th><th>decided by</th></tr></thead>"
        "<tbody></tbody></table>"
    )


def _triggers(t: dict[str, Any] | None) -> str:
    """The triggers section: method, recall and precision, the 2x2 grid, every prompt."""
    if not t:
        return ""
    head = f"<p>method: <b>{_e(t.get('method') or 'catalog call')}</b></p>"
    if t.get("invalid"):
        return _section("Triggers", head + f"<p class='invalid'>INVALID: {_e(t['invalid'])}</p>")

    def ratio(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    grid = (
        "<div class='confusion'><div></div><div class='h'>fired</div><div class='h'>did "
        "not fire</div><div class='h'>should trigger</div>"
        f"<div class='c tp'>{t['tp']}<small>tp</small></div>"
        f"<div class='c fn'>{t['fn']}<small>fn</small></div>"
        "<div class='h'>should not</div>"
        f"<div class='c fp'>{t['fp']}<small>fp</small></div>"
        f"<div class='c tn'>{t['tn']}<small>tn</small></div></div>"
    )
    rows = []
    for d in t.get("details") or []:
        fired = {True: "fired", False: "no", None: "errored"}[d.get("fired")]
        right = (d.get("fired") is True) == bool(d.get("should_trigger"))
        rate = "" if d.get("rate") is None else f"{d['rate']:.2f}"
        took = ", ".join(d.get("stolen_by") or [])
        rows.append(
            f"<tr class='{'ok' if right else 'bad'}'><td>{_e(d['prompt'])}</td>"
            f"<td>{'yes' if d['should_trigger'] else 'no'}</td><td>{fired}</td>"
            f"<td>{rate}</td><td>{_e(took)}</td></tr>"
        )
    table = (
        "<table class='prompts'><thead><tr><th>prompt</th><th>should trigger</th>"
        "<th>fired</th><th>rate</th><th>taken by</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    stats = f"<p>recall {ratio(t.get('recall'))} · precision {ratio(t.get('precision'))}</p>"
    return _section("Triggers", head + stats + grid + table)


def confusion_matrix(reports: list[dict[str, Any]]) -> str:
    """Who took each skill's should-trigger prompts, across a library: a row per skill, a
    column per skill that was picked (and one for nothing), counts shaded by share."""
    names = [str(r["skill"]) for r in reports]
    counts: dict[str, dict[str, int]] = {n: {} for n in names}
    for r in reports:
        for d in r.get("details") or []:
            if not d["should_trigger"]:
                continue
            if d.get("fired") is None:
                took = ["(errored)"]
            else:
                took = [r["skill"]] if d["fired"] else list(d.get("stolen_by") or [])
                took = took or ["(nothing)"]
            for t in took:
                counts[r["skill"]][t] = counts[r["skill"]].get(t, 0) + 1
    columns = names + sorted({t for c in counts.values() for t in c} - set(names))
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for n in names:
        total = sum(counts[n].values()) or 1
        cells = []
        for c in columns:
            v = counts[n].get(c, 0)
            tone = "mine" if c == n else "other"
            cells.append(f"<td class='m {tone}' style='--share:{v / total:.2f}'>{v or ''}</td>")
        body.append(f"<tr><th>{_e(n)}</th>{''.join(cells)}</tr>")
    return (
        f"<table class='matrix'><thead><tr><th>prompts of ↓ taken by →</th>{head}</tr>"
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )


def trigger_details(t: dict[str, Any]) -> str:
    """A trigger report's figures, grid and prompts, without a section around them."""
    return _triggers(t).split("</h2>", 1)[1].removesuffix("</section>")


def section(title: str, inner: str) -> str:
    """A titled section of a page (inner is markup: escape what goes in it)."""
    return _section(title, inner)


def page(title: str, body: str) -> str:
    """A page in the report's style, without data blocks or script (triggers, tune)."""
    return _page(title, body, "", "")


def render_triggers(by_method: dict[str, list[dict[str, Any]]]) -> str:
    """`skillbench triggers ROOT --html`: per method, the library's confusion matrix and each
    skill's prompts."""
    sections = []
    for method, reports in by_method.items():
        inner = [confusion_matrix(reports)] if len(reports) > 1 else []
        for r in reports:
            inner.append(f"<h3>{_e(r['skill'])}</h3>" + trigger_details(r))
        sections.append(_section(f"Triggers ({method})", "".join(inner)))
    return page(
        "skillbench triggers", "<header><h1>skillbench triggers</h1></header>" + "".join(sections)
    )


def _efficiency(run: RunFolder) -> str:
    eff = run.summary.efficiency
    if not eff:
        return ""
    metrics = [
        ("turns", "turns", "{:.1f}"),
        ("seconds", "seconds", "{:.1f} s"),
        ("input_tokens", "input tokens", "{:,.0f}"),
        ("output_tokens", "output tokens", "{:,.0f}"),
        ("cost_usd", "cost", "${:.2f}"),
    ]
    charts = []
    for attr, label, fmt in metrics:
        values = {arm: getattr(e, attr) for arm, e in eff.items()}
        top = max((v for v in values.values() if v), default=0) or 1
        bars = []
        for i, (arm, v) in enumerate(values.items()):
            width = 0 if v is None else 200 * v / top
            shown = "n/a" if v is None else fmt.format(v)
            cls = "cand" if arm == CANDIDATE else "opp"
            bars.append(
                f"<text x='0' y='{i * 22 + 14}'>{_e(arm)}</text>"
                f"<rect class='{cls}' x='90' y='{i * 22 + 3}' width='{width:.1f}' "
                f"height='14'/><text x='{95 + width:.1f}' y='{i * 22 + 14}'>"
                f"{_e(shown)}</text>"
            )
        height = 22 * len(values) + 4
        charts.append(
            f"<figure><figcaption>{_e(label)} per session</figcaption><svg "
            f"width='380' height='{height}' role='img'>{''.join(bars)}</svg>"
            "</figure>"
        )
    total = (
        f"<p>run total ${run.summary.spend_usd:.2f} (judge, triggers and generation included)</p>"
    )
    if run.summary.accounting is not None:  # against the plan, by call kind and by arm
        total += "".join(f"<p>{_e(line)}</p>" for line in accounting_lines(run.summary.accounting))
    if (used := models_line(eff)) is not None:  # an agent CLI's calls, by the model each named
        total += f"<p>{_e(used)}</p>"
    return _section("Efficiency", "<div class='charts'>" + "".join(charts) + "</div>" + total)


_SLOT = re.compile(r"@@([A-Z]+)@@")
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>@@TITLE@@</title><style>@@CSS@@</style></head>
<body>
@@BODY@@
@@DATA@@
<script>@@JS@@</script>
</body></html>
"""
