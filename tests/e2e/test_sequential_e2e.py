"""`eval --sequential` end to end: real podman sandboxes, the scripted driver through the real
SDK against the fake model server. A run cut by --max-cost resumes, stops at its first look
with the sessions it did not need recorded as not run, and the gate's re-derivations accept
its receipt; an edited one they refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.team.gate import stopping_problem
from skillbench.team.receipts import inconsistency, read_receipt, store_dir
from tests.helpers import BASE, CAND, MODEL, conv, run_eval, skill, write_file

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]


def test_a_sequential_run_stops_early_resumes_and_its_receipt_rederives(
    fake, tmp_path: Path, capsys
) -> None:
    cases = {
        f"evals/cases/c{i}.yaml": f"task: Greeting number {i}\nchecks: [{{file_exists: g.txt}}]\n"
        for i in range(10)
    }
    folder = skill(tmp_path, cases)
    script = {
        "conversations": [
            conv(CAND, "Greeting number", write_file("g.txt", "hi"), {"text": "done"}),
            conv(BASE, "Greeting number", {"text": "no"}),
        ]
    }
    first = fake(script)
    run = tmp_path / "run"
    # the first attempt is cut by the cap after its first session
    code, _, summary = run_eval(
        capsys, folder, run, "--sequential", "--parallel", "1", "--max-cost", "0.000001"
    )
    plan = json.loads((run / "plan.json").read_text())
    assert plan["sequential"]["looks"] == [6, 8, 10]  # declared before the first session
    assert summary["complete"] is False and summary["stopped"]
    first.stop()  # the same endpoint again: a resume refuses another
    server = fake(script, port=int(first.url.rsplit(":", 1)[1]))
    code = main(["eval", "--resume", str(run), "--model", MODEL, "--quiet", "--no-gen"])
    out = capsys.readouterr().out.splitlines()
    summary = json.loads((run / "summary.json").read_text())
    assert code == 0, out
    assert summary["verdict"] == "PASS" and summary["complete"] is True
    assert summary["stop"]["look"] == 1 and summary["stop"]["reason"] == "boundary"
    assert summary["stop"]["decided"] == [6] and summary["stop"]["bounds"] == [6]
    journal = [json.loads(x) for x in (run / "journal.jsonl").read_text().splitlines()]
    sessions = [j for j in journal if j["type"] == "session"]
    # the cap's refusal is journaled as not run (nothing spent), and the resume runs it
    refused = [j for j in sessions if j["stop_reason"] == "budget"]
    assert refused and all(j["cost_usd"] == 0 for j in refused)
    keys = [j["key"] for j in sessions if j["stop_reason"] != "budget"]
    assert len(keys) == len(set(keys)) == 12  # 6 cases x 2 arms, none run twice
    assert {k.split(".")[0] for k in keys} == {f"c{i}" for i in range(6)}
    assert summary["not_run"] == 8  # the 4 cases past the stop, both arms: not losses or ties
    assert (summary["scored_rows"], summary["expected_rows"]) == (6, 10)
    assert any(line.startswith("stopped early:") for line in out), out
    # the accounting: what ran per arm, the spend by kind, what the stop saved at the mean price of a session that ran (the report prints it)
    acc = summary["accounting"]
    assert acc["sessions"] == {"baseline": 6, "candidate": 6}
    assert acc["not_run"] == 8 and acc["refused_sessions"] == 0  # the resume ran the cut one
    mean = sum(acc["by_arm"].values()) / sum(acc["sessions"].values())
    assert acc["saved_usd"] == pytest.approx(8 * mean, abs=1e-6)
    assert acc["spent_usd"] == pytest.approx(sum(acc["by_kind"].values()), abs=1e-6)
    assert any(line.startswith("stopping saved ") for line in out), out
    assert "stopping saved " in (run / "report.html").read_text()
    receipt = read_receipt(run / "receipt.json")
    assert inconsistency(receipt) is None and stopping_problem(receipt) is None
    # the gate accepts it, once told the fake server is an endpoint it may trust
    allow = ["gate", str(folder), "--allow-endpoint", server.url]
    assert main(allow) == 0
    assert capsys.readouterr().out.startswith(
        f"gate passed: greeter: PASS (run {receipt.run_id}, 6/10 rows scored"
    )
    # an edited receipt: with three of look 1's cases cut out, its rule would not stop there
    stored = store_dir(receipt.skill, receipt.digest) / f"{receipt.run_id}.json"
    body = json.loads(stored.read_text())
    body["rows"] = [r for r in body["rows"] if r["case"] not in ("c3", "c4", "c5")]
    stored.write_text(json.dumps(body))
    assert main(allow) == 1
    refused = capsys.readouterr().out
    assert refused.startswith(
        f"gate refused: greeter: the newest measured receipt (run {receipt.run_id})"
    )
    assert "c3 has no row and is not on record as skipped" in refused


def test_a_sequential_run_whose_verdict_is_settled_after_one_wave_runs_no_more(
    fake, tmp_path: Path, capsys
) -> None:
    # three cases can reach nothing but INCONCLUSIVE (under 5 decided votes): the fixed design
    # runs 3 cases x 3 repetitions x 2 arms = 18 sessions for it, the sequential one the first
    # wave only, and the gate's re-derivation agrees that the stop was one its rule makes
    cases = {
        f"evals/cases/c{i}.yaml": f"task: Greeting number {i}\nchecks: [{{file_exists: g.txt}}]\n"
        for i in range(3)
    }
    folder = skill(tmp_path, cases)
    script = {
        "conversations": [
            conv(CAND, "Greeting number", write_file("g.txt", "hi"), {"text": "done"}),
            conv(BASE, "Greeting number", {"text": "no"}),
        ]
    }
    fake(script)
    run = tmp_path / "run"
    code, out, summary = run_eval(capsys, folder, run, "--sequential", "--k", "3")
    assert code == 3, out  # INCONCLUSIVE
    assert summary["verdict"] == "INCONCLUSIVE" and summary["complete"] is True
    assert summary["stop"]["reason"] == "curtailed" and summary["stop"]["decided"] == [3]
    assert summary["not_run"] == 12 and summary["scored_rows"] == 3
    assert any(
        line.startswith("stopped early: no repetition left could change its verdict at look 1")
        for line in out
    ), out
    receipt = read_receipt(run / "receipt.json")
    assert inconsistency(receipt) is None and stopping_problem(receipt) is None
