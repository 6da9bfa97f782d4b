"""report.html at scale: a run folder of N rows (3 arms each, transcripts of ~40 events),
rendered, then loaded in headless Chromium. Prints the render time, the page size, the time
until every row is on the page, and the time to open one row (its three transcripts parsed
and drawn), against the same page with 10 rows as the ideal.

    .venv/bin/python bench/report.py [--rows 500]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import msgspec
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from skillbench.report.html import write_report
from skillbench.results.checks import CheckResult
from skillbench.results.records import ArmResult, Plan, RowRecord, SessionRecord, Unit
from skillbench.results.score import summarize

ARMS = ["baseline", "candidate", "incumbent"]


def run_folder(folder: Path, n: int) -> Path:
    cases = [f"case-{i:03d}" for i in range(n)]
    plan = Plan(
        run_id="bench",
        skill="bench",
        skill_dir="/x",
        version="sha256:" + "0" * 64,
        assets_digest="d",
        model="scripted/demo",
        judge_model="scripted/demo",
        k=1,
        seed=1,
        arms=ARMS,
        opponents=["baseline", "incumbent"],
        sessions=cases,
        units=[Unit(c, c) for c in cases],
        engine_version="0",
        created_at="now",
    )
    (folder / "transcripts").mkdir(parents=True)
    sessions, rows = {}, []
    for i, case in enumerate(cases):
        for arm in ARMS:
            key = f"{case}.{arm}.1"
            events = [{"type": "message", "role": "user", "text": f"task {case}"}]
            for t in range(13):
                events += [
                    {
                        "type": "tool_call",
                        "id": str(t),
                        "name": "bash",
                        "arguments": {"command": f"cat file{t}.py"},
                    },
                    {
                        "type": "tool_result",
                        "id": str(t),
                        "name": "bash",
                        "text": "line of output\n" * 40,
                        "is_error": False,
                        "exit_code": 0,
                    },
                    {"type": "message", "role": "assistant", "text": "thinking " * 30},
                ]
            (folder / "transcripts" / f"{key}.jsonl").write_text(
                "".join(json.dumps(e) + "\n" for e in events)
            )
            passed = (arm == "candidate") != (i % 3 == 0)
            sessions[key] = SessionRecord(
                key=key,
                session=case,
                arm=arm,
                rep=1,
                outcome="pass" if passed else "fail",
                turns=13,
                seconds=30.0,
                transcript=f"transcripts/{key}.jsonl",
                checks={case: [CheckResult("file_exists: out", passed, "x")]},
            )
        for opponent in ("baseline", "incumbent"):
            cand, opp = sessions[f"{case}.candidate.1"], sessions[f"{case}.{opponent}.1"]
            outcome = {(True, False): "win", (False, True): "loss"}.get(
                (cand.outcome == "pass", opp.outcome == "pass"), "tie"
            )
            arms = {
                "candidate": ArmResult(cand.outcome == "pass", False, []),
                opponent: ArmResult(opp.outcome == "pass", False, []),
            }
            rows.append(
                RowRecord(
                    case=case,
                    rep=1,
                    opponent=opponent,
                    outcome=outcome,
                    decided_by="checks",
                    arms=arms,
                )
            )
    summary = summarize(plan, sessions, rows, [])
    (folder / "plan.json").write_bytes(msgspec.json.encode(plan))
    (folder / "summary.json").write_bytes(msgspec.json.encode(summary))
    journal = [*sessions.values(), *rows]
    (folder / "journal.jsonl").write_bytes(
        b"".join(msgspec.json.encode(r) + b"\n" for r in journal)
    )
    return folder


def measure(driver: webdriver.Chrome, n: int) -> tuple[float, float, float, int]:
    folder = run_folder(Path(tempfile.mkdtemp(prefix="bench-report-")) / "run", n)
    t = time.perf_counter()
    page = write_report(folder)
    render = time.perf_counter() - t
    t = time.perf_counter()
    driver.get(page.as_uri())  # returns once the page's own script has run
    rows = driver.find_elements(By.CSS_SELECTOR, "#rows tbody tr.row")
    load = time.perf_counter() - t
    assert len(rows) == 2 * n
    t = time.perf_counter()
    rows[0].click()
    assert len(driver.find_elements(By.CSS_SELECTOR, "tr.detail .arm")) == 3
    open_row = time.perf_counter() - t
    return render, load, open_row, page.stat().st_size


def main(n: int) -> None:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        measure(driver, 10)  # warm the browser
        small = measure(driver, 10)
        big = measure(driver, n)
    finally:
        driver.quit()
    print(f"report.html: {n} cases x 3 arms (~40 events per transcript), headless Chromium")
    for label, (render, load, open_row, size) in (("10 cases", small), (f"{n} cases", big)):
        print(
            f"  {label:>9}: render {render:5.2f} s · {size / 1e6:5.1f} MB · load "
            f"{load:5.2f} s · open a row {open_row * 1000:5.0f} ms"
        )
    print(
        f"  open a row at {n} cases / at 10 cases: {big[2] / small[2]:.2f} (1.0 = no cost "
        "from the other rows)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=500)
    main(parser.parse_args().rows)
