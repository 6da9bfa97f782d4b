"""What a tuning run shows (issue 25, parts 3 to 5): the table of rounds, the chosen
description's test figures beside the original's, the collisions with sibling skills it
introduced or removed; as terminal lines, as the `--json` object and as `report.html`."""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from skillbench.engine.triggers import Counts, PromptResult
from skillbench.report.html import page, section, trigger_details
from skillbench.tune.rounds import Measured, Outcome, Round, choose
from skillbench.tune.splits import SETS, Prompts

DESCRIPTION_SHOWN = 56  # characters of a description in the table


def method_label(outcome: Outcome) -> str:
    plan = outcome.plan
    return "catalog call" if plan.method == "catalog" else f"agent {plan.agent}"


def _ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _figures(c: Counts | None) -> dict[str, Any] | None:
    return None if c is None else msgspec.to_builtins(c)


def collisions(results: Iterable[PromptResult]) -> set[tuple[str, str]]:
    """(sibling, prompt) where a sibling competes with the skill and one of them is wrong:
    the sibling was picked for a request that is the skill's, or both were picked for one
    that is not."""
    return {(s, r.prompt) for r in results for s in r.others if r.should_trigger or r.fired}


def collision_change(o: Outcome) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(introduced, removed) by the chosen description against the original, over every
    prompt (the rounds' train and validation, and the test)."""
    if o.test is None:
        return [], []
    best = choose(o.rounds)
    before = collisions([*o.rounds[0].results, *o.test.original.results])
    after = collisions([*best.results, *o.test.chosen.results])
    return sorted(after - before), sorted(before - after)


def split_line(o: Outcome) -> str:
    s = o.split
    sizes = ", ".join(
        f"{name} {len(p.should_trigger)}+{len(p.should_not_trigger)}"
        for name, p in zip(SETS, (s.train, s.validation, s.test), strict=True)
    )
    held = f"; test held apart in {Path(s.test_file).name}" if s.test_file else ""
    return f"split (seed {s.seed}, should+should-not): {sizes}{held}"


COLUMNS = ("train R", "train P", "valid R", "valid P")


def _shown(text: str, original: str) -> str:
    """A description cut to fit the table; a rewrite of the original from where it departs
    from it (the shared start is the same in every row)."""
    same = 0
    while same < min(len(text), len(original)) and text[same] == original[same]:
        same += 1
    if text != original and same > DESCRIPTION_SHOWN // 2:
        start = text.rfind(" ", 0, same) + 1
        text = "…" + text[start:]
    return text if len(text) <= DESCRIPTION_SHOWN else text[: DESCRIPTION_SHOWN - 1] + "…"


def _row(r: Round, chosen: int | None, original: str) -> str:
    head = f"  {r.round:<4}{'*' if r.round == chosen else ' '}"
    if r.description is None:
        return f"{head}  {r.note}"
    if r.invalid:
        return f"{head}  INVALID: {r.invalid}"
    text = r.description
    shown = _shown(text, original)
    t, v = r.train, r.validation
    assert t is not None and v is not None
    figures = "".join(f"{_ratio(x):>8}" for x in (t.recall, t.precision, v.recall, v.precision))
    return f"{head}{figures}{len(text):>7}  {shown}"


def _grouped(label: str, pairs: list[tuple[str, str]]) -> list[str]:
    """One line per sibling: how many prompts, the first few of them."""
    by: dict[str, list[str]] = {}
    for skill, prompt in pairs:
        by.setdefault(skill, []).append(prompt)
    out = []
    for skill, prompts in sorted(by.items()):
        shown = ", ".join(f'"{p}"' for p in prompts[:3])
        more = f" and {len(prompts) - 3} more" if len(prompts) > 3 else ""
        out.append(f"collisions {label}: {skill} on {len(prompts)} prompt(s): {shown}{more}")
    return out


def _test_figures(m: Measured) -> str:
    if m.test is None:
        return f"INVALID ({m.invalid})"
    c = m.test
    return f"recall={_ratio(c.recall)} precision={_ratio(c.precision)}"


def lines(o: Outcome) -> list[str]:
    """The terminal report."""
    plan = o.plan
    chosen = choose(o.rounds).round if o.test is not None else None
    out = [
        f"tune {plan.skill}: {method_label(o)} on {plan.model}, proposer {plan.proposer_model}, "
        f"{plan.runs} run(s) per prompt",
        split_line(o),
        f"  {'round':<5}" + "".join(f"{c:>8}" for c in COLUMNS) + f"{'chars':>7}  description",
        *(_row(r, chosen, o.rounds[0].description or "") for r in o.rounds),
    ]
    if o.early:
        out.append(f"stopped early: {o.early}")
    if o.stopped:
        out.append(f"stopped: {o.stopped}")
    if o.test is None:
        return out
    if chosen:
        out.append(f"chosen: round {chosen} (the best validation F1; ties go to the shorter)")
    else:
        out.append("chosen: the original (no round beat it on validation)")
    t = o.test
    test = f"test (measured once): original {_test_figures(t.original)}"
    if chosen:
        test += f" · chosen {_test_figures(t.chosen)}"
    out.append(test)
    introduced, removed = collision_change(o)
    out += _grouped("removed", removed) + _grouped("introduced", introduced)
    if chosen and not (introduced or removed):
        out.append("collisions with sibling skills: none introduced or removed")
    return out


def _prompts(p: Prompts) -> dict[str, list[str]]:
    return {
        "should_trigger": list(p.should_trigger),
        "should_not_trigger": list(p.should_not_trigger),
    }


def result(o: Outcome, *, applied: bool = False) -> dict[str, Any]:
    """The `--json` object (result.json)."""
    s = o.split
    out: dict[str, Any] = {
        "skill": o.plan.skill,
        "run": o.run_dir,
        "method": method_label(o),
        "split": {
            "train": _prompts(s.train),
            "validation": _prompts(s.validation),
            "test": _prompts(s.test),
            "seed": s.seed,
            "test_file": s.test_file,
        },
        "rounds": [
            {
                "round": r.round,
                "description": r.description,
                "train": _figures(r.train),
                "validation": _figures(r.validation),
                "invalid": r.invalid,
                "note": r.note,
                "spend_usd": round(r.spend_usd, 6),
            }
            for r in o.rounds
        ],
        "original": {"description": o.rounds[0].description if o.rounds else None, "test": None},
        "chosen": None,
        "collisions": None,
        "early_stop": o.early,
        "stopped": o.stopped,
        "spend_usd": round(o.spend_usd, 6),
        "applied": applied,
    }
    if o.test is not None:
        introduced, removed = collision_change(o)
        out["original"]["test"] = _figures(o.test.original.test)
        out["chosen"] = {
            "description": o.test.chosen.description,
            "round": o.test.chosen.round,
            "test": _figures(o.test.chosen.test),
        }
        out["collisions"] = {
            "introduced": [{"skill": k, "prompt": p} for k, p in introduced],
            "removed": [{"skill": k, "prompt": p} for k, p in removed],
        }
    return out


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _details(o: Outcome, c: Counts | None, results: list[PromptResult], invalid: str | None) -> str:
    t: dict[str, Any] = dict(_figures(c) or {"recall": None, "precision": None})
    t |= {"method": method_label(o), "invalid": invalid, "details": msgspec.to_builtins(results)}
    return trigger_details(t)


def render(o: Outcome) -> str:
    """report.html: the result, the rounds table, each round's prompts, the split."""
    text = "\n".join(lines(o))
    parts = [
        f"<header><h1>skillbench tune {_e(o.plan.skill)}</h1></header>",
        section("Result", f"<pre>{_e(text)}</pre>"),
    ]
    chosen = choose(o.rounds).round if o.test is not None else None
    rows = []
    for r in o.rounds:
        t, v = r.train, r.validation
        cells = [
            _ratio(x)
            for x in ((t.recall, t.precision, v.recall, v.precision) if t and v else (None,) * 4)
        ]
        text = r.description or r.note or ""
        rows.append(
            f"<tr class='{'ok' if r.round == chosen else ''}'><td>{r.round}"
            f"{' (chosen)' if r.round == chosen else ''}</td>"
            + "".join(f"<td>{c}</td>" for c in cells)
            + f"<td>{_e(r.invalid or text)}</td></tr>"
        )
    parts.append(
        section(
            "Rounds",
            "<table class='prompts'><thead><tr><th>round</th><th>train recall</th><th>train "
            "precision</th><th>validation recall</th><th>validation precision</th>"
            f"<th>description</th></tr></thead><tbody>{''.join(rows)}</tbody></table>",
        )
    )
    if o.test is not None:
        for label, m in (("original", o.test.original), ("chosen", o.test.chosen)):
            inner = f"<p><b>{_e(m.description)}</b></p>" + _details(o, m.test, m.results, m.invalid)
            parts.append(section(f"Test: the {label} description (round {m.round})", inner))
    train, validation = o.split.train.all(), o.split.validation.all()
    for r in o.rounds:
        if r.description is None:
            parts.append(section(f"Round {r.round}", f"<p>{_e(r.note)}</p>"))
            continue
        inner = f"<p><b>{_e(r.description)}</b></p>"
        for label, prompts in (("train", train), ("validation", validation)):
            picked = [x for x in r.results if x.prompt in prompts]
            c = r.train if label == "train" else r.validation
            inner += f"<h3>{label}</h3>" + _details(o, c, picked, r.invalid)
        parts.append(section(f"Round {r.round}", inner))
    split = "".join(
        f"<h3>{name}</h3><ul>"
        + "".join(f"<li>{_e(p)}</li>" for p in prompts.should_trigger)
        + "".join(f"<li><i>not:</i> {_e(p)}</li>" for p in prompts.should_not_trigger)
        + "</ul>"
        for name, prompts in zip(
            SETS, (o.split.train, o.split.validation, o.split.test), strict=True
        )
    )
    parts.append(section("Split", split))
    return page(f"skillbench tune {o.plan.skill}", "".join(parts))


def write(o: Outcome, *, applied: bool = False) -> Path:
    """result.json and report.html in the run folder; returns the page's path."""
    run_dir = Path(o.run_dir)
    (run_dir / "result.json").write_bytes(
        msgspec.json.format(msgspec.json.encode(result(o, applied=applied)))
    )
    path = run_dir / "report.html"
    path.write_text(render(o), encoding="utf-8")
    return path
