"""`skillbench report RUN --format markdown`: a pull-request comment. The verdict and why, the
comparisons, the rows that are not ties, the triggers line; nothing links outside the comment
(a reader sees the run in its report.html)."""

from __future__ import annotations

import html
import re

from skillbench.report.evidence import evidence_lines
from skillbench.report.terminal import comparison_text, report_lines
from skillbench.report.why import failing_checks, verifier_outputs
from skillbench.results.records import CANDIDATE
from skillbench.results.run_folder import RunFolder

# what agent-written text (a check's detail, a command, a case name) must not be read as:
# HTML (GitHub keeps <h2>, <details> in a comment) or markdown (a heading, emphasis, a link)
# (an underscore inside a word, file_exists, emphasises nothing on GitHub: left as it is)
_MARKDOWN = str.maketrans({c: f"\\{c}" for c in "\\`*[]#|~"})


# and what GitHub turns into a mention (which notifies) or a link out of the comment: a zero
# width space breaks each
_WWW = re.compile(r"(www)(\.)", re.I)


def _cell(text: object) -> str:
    """`text` on one line, shown as it is: escaped for HTML and markdown, no mention or
    link."""
    escaped = html.escape(str(text), quote=False).translate(_MARKDOWN)
    escaped = escaped.replace("@", "@\u200b").replace("://", ":\u200b//")
    escaped = _WWW.sub("\\1\u200b\\2", escaped)
    return " ".join(escaped.splitlines())


def _fenced(body: str) -> list[str]:
    """`body` as a code block whose fence is longer than any run of backticks in it, so the
    text (a verifier printing what the candidate wrote) cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, body, fence]


def markdown(run: RunFolder) -> str:
    """The comment's text."""
    s = run.summary
    head = report_lines(s)[0].removeprefix("verdict: ")
    out = [f"### skillbench: `{s.skill}` — {head}", "", f"**Why:** {s.why}", ""]
    for opponent, c in s.comparisons.items():
        out.append(f"- candidate vs {opponent}: **{c.verdict}** — {comparison_text(c)}")
    out += [f"- {_cell(line.strip())}" for line in evidence_lines(s)]
    if s.triggers and not s.triggers.get("invalid"):
        t = s.triggers
        recall, precision = _ratio(t.get("recall")), _ratio(t.get("precision"))
        out.append(
            f"- triggers ({t.get('method') or 'catalog call'}): recall {recall}, "
            f"precision {precision}"
        )
    elif s.triggers:
        out.append(
            f"- triggers ({_cell(s.triggers.get('method'))}): **invalid** — "
            f"{_cell(s.triggers['invalid'])}"
        )
    scripted = " (scripted driver: not a model)" if s.driver == "scripted" else ""
    out.append(
        f"- models: agent {s.agent} {s.agent_version} · {s.models.get('agent', '')} · "
        f"judge {s.models.get('judge', '')}{scripted}"
    )
    decided = [r for r in s.rows if r.outcome in ("win", "loss")]
    decided.sort(key=lambda r: (r.outcome != "loss", r.case, r.rep))
    out += ["", f"#### Wins and losses ({len(decided)} of {len(s.rows)})", ""]
    if decided:
        out += [
            "| case | rep | vs | outcome | decided by | failing checks |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {_cell(r.case)} | {r.rep} | {_cell(r.opponent)} | "
            f"{'**loss**' if r.outcome == 'loss' else r.outcome} | {_cell(r.decided_by)} | "
            f"{'<br>'.join(_cell(x) for x in failing_checks(r.arms)) or '-'} |"
            for r in decided
        ]
    else:
        out.append("No row is a win or a loss.")
    failed_ties = [r for r in s.rows if r.outcome == "tie" and not r.arms[CANDIDATE].passed]
    if failed_ties:  # both arms failed: the row says nothing either way, but why it failed does
        out += ["", f"#### Ties where the candidate failed too ({len(failed_ties)})", ""]
        out += [
            f"- {_cell(r.case)} rep {r.rep} vs {_cell(r.opponent)}: "
            f"{'; '.join(_cell(x) for x in failing_checks(r.arms)) or 'failed'}"
            for r in failed_ties
        ]
    printed = [
        (r, text)
        for r in s.rows
        if not r.arms[CANDIDATE].passed
        for text in verifier_outputs(r.arms)
    ]
    if printed:  # a failing verifier's own words, folded: they can be long
        out += [
            "",
            f"<details><summary>What the failing verifiers printed ({len(printed)})</summary>",
        ]
        for r, text in printed:
            head, _, body = text.partition("\n")
            out += ["", f"{_cell(r.case)} rep {r.rep} · {_cell(head)}", "", *_fenced(body)]
        out += ["", "</details>"]
    if s.diagnostics:
        out += [
            "",
            f"<details><summary>{len(s.diagnostics)} diagnostic(s) about the eval itself</summary>",
            "",
        ]
        out += [
            f"- {d.kind}: {_cell(' · '.join(x for x in (d.case, d.check or '') if x))} — "
            f"{_cell(d.detail)}"
            for d in s.diagnostics
        ]
        out += ["", "</details>"]
    out += ["", f"<sub>run {s.run_id} · version {s.version[:19]}…</sub>", ""]
    return "\n".join(out)


def _ratio(x: object) -> str:
    return "n/a" if not isinstance(x, float | int) else f"{x:.2f}"
