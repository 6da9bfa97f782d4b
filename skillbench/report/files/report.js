"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const cache = {};
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function transcript(block) {
  if (!(block in cache)) {
    cache[block] = JSON.parse(document.getElementById("t" + block).textContent);
  }
  return cache[block];
}
function long(text) {
  const s = String(text || "");
  if (s.length < 600 && s.split("\n").length < 12) return el("pre", "", s);
  const d = el("details");
  d.appendChild(el("summary", "", s.split("\n")[0].slice(0, 120) + " … (" + s.length + " chars)"));
  d.appendChild(el("pre", "", s));
  return d;
}
function event(ev) {
  const kind = ev.type;
  if (kind === "message" && !ev.text) return null;  // a turn of tool calls only
  if (kind === "trace_start") {
    return el("div", "ev meta", "started " + (ev.started_at || "") + " · " + (ev.agent || "agent"));
  }
  if (kind === "trace_end") {
    const bits = ["stop " + ev.stop_reason, ev.turns + " turns", (ev.duration_ms / 1000).toFixed(1) + " s"];
    if (ev.error) bits.push("error: " + ev.error);
    return el("div", "ev meta", bits.join(" · "));
  }
  const box = el("div", "ev " + kind + (ev.role ? " " + ev.role : "") + (ev.is_error ? " error" : ""));
  if (kind === "message") {
    box.appendChild(el("span", "k", ev.role));
    box.appendChild(long(ev.text));
  } else if (kind === "tool_call") {
    box.appendChild(el("span", "k", "tool call: " + ev.name));
    box.appendChild(long(JSON.stringify(ev.arguments, null, 2)));
  } else if (kind === "tool_result") {
    const code = ev.exit_code === null || ev.exit_code === undefined ? "" : " (exit " + ev.exit_code + ")";
    box.appendChild(el("span", "k", "result: " + ev.name + code));
    box.appendChild(long(ev.text));
  } else {
    box.appendChild(el("span", "k", kind));
    box.appendChild(long(ev.text !== undefined ? ev.text : JSON.stringify(ev)));
  }
  return box;
}
function armColumn(row, arm) {
  const key = D.units[row.case] + "." + arm + "." + row.rep;
  const s = D.sessions[key];
  const col = el("div", "arm");
  col.dataset.arm = arm;
  col.appendChild(el("h4", "", arm));
  if (!s) { col.appendChild(el("p", "sub", "no session")); return col; }
  const cost = s.cost_usd === null || s.cost_usd === undefined ? "n/a" : "$" + s.cost_usd.toFixed(3);
  let sub = s.outcome + " · " + (s.stop_reason || "-") + " · " + s.turns + " turns · " +
    s.seconds.toFixed(1) + " s · " + cost;
  if (s.reused_from) sub += " · reused from run " + s.reused_from;
  col.appendChild(el("div", "sub", sub));
  if (s.error) col.appendChild(el("div", "sub", "error: " + s.error));
  const checks = el("ul", "checks");
  for (const c of (s.checks[row.case] || [])) {
    const li = el("li", "check " + (c.passed ? "pass" : "fail"), c.name);
    li.appendChild(el("span", "detail", c.detail));
    const metrics = Object.entries(c.metrics || {});
    if (metrics.length) {
      li.appendChild(el("span", "detail", "metrics: " + metrics.map(function (m) { return m[0] + " " + m[1]; }).join(", ")));
    }
    if (c.output && !c.passed) li.appendChild(long(c.output));  // the failing verifier's own words
    checks.appendChild(li);
  }
  col.appendChild(checks);
  for (const n of (s.notes || [])) col.appendChild(el("div", "sub", n));
  const t = el("div", "transcript");
  for (const ev of transcript(s.block)) {
    const shown = event(ev);
    if (shown) t.appendChild(shown);
  }
  col.appendChild(t);
  return col;
}
function detail(row) {
  const td = el("td");
  td.colSpan = 5;
  const arms = el("div", "arms");
  for (const arm of D.arms) arms.appendChild(armColumn(row, arm));
  td.appendChild(arms);
  if (row.judge_reasons && row.judge_reasons.length) {
    const j = el("div", "judge");
    j.appendChild(el("h4", "", "judge (" + row.decided_by + ")"));
    const ul = el("ol");
    row.judge_reasons.forEach(function (reason, i) {
      const first = (i === 0) === (row.judge_candidate_first !== false);
      const answer = row.judge_winners && row.judge_winners[i] ? row.judge_winners[i] : "?";
      ul.appendChild(el("li", "", "order " + (i + 1) + " (candidate shown as " + (first ? "A" : "B") +
        "): " + answer + " — " + reason));
    });
    j.appendChild(ul);
    td.appendChild(j);
  }
  const tr = el("tr", "detail");
  tr.appendChild(td);
  return tr;
}
function rows() {
  const body = document.querySelector("#rows tbody");
  D.rows.forEach(function (row, i) {
    const tr = el("tr", "row");
    tr.id = "row-" + i;
    tr.dataset.outcome = row.outcome;
    tr.appendChild(el("td", "", row.case));
    tr.appendChild(el("td", "", row.rep));
    tr.appendChild(el("td", "", row.opponent));
    tr.appendChild(el("td", "o-" + row.outcome, row.outcome + (row.scored ? "" : " (unscored)")));
    tr.appendChild(el("td", "", row.decided_by));
    let open = null;
    tr.addEventListener("click", function () {
      if (open) { open.remove(); open = null; tr.classList.remove("open"); return; }
      open = detail(row);
      tr.after(open);
      tr.classList.add("open");
    });
    body.appendChild(tr);
  });
  for (const b of document.querySelectorAll(".filters button")) {
    b.addEventListener("click", function () {
      for (const o of document.querySelectorAll(".filters button")) o.classList.remove("on");
      b.classList.add("on");
      for (const tr of body.querySelectorAll("tr.row")) {
        const show = b.dataset.filter === "all" || tr.dataset.outcome === b.dataset.filter;
        tr.style.display = show ? "" : "none";
        const next = tr.nextElementSibling;
        if (next && next.classList.contains("detail")) next.style.display = show ? "" : "none";
      }
    });
  }
}
rows();
