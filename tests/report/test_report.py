"""The review artifacts (issue 16) built from a fixed run folder, no browser: report.html's
data and its escaping, `report --format` for every format, `compare` and `view`."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import httpx
import msgspec
import pytest

from skillbench.cli import main
from skillbench.report.conformance import ReportFormatConformance
from skillbench.report.formats import FORMATS, ReportFormat
from skillbench.report.html import render
from skillbench.results.checks import CheckResult
from skillbench.results.records import ArmResult, Plan, RowRecord, SessionRecord, Unit
from skillbench.results.run_folder import RunFolder, load_run
from skillbench.results.score import summarize

ATTACK = "</script><script>window.pwned = 1</script><!-- <img src=x onerror=alert(1)>"


def fixed_run(folder: Path, outcomes: dict[str, str], run_id: str = "run-a") -> Path:
    """A finished run folder written from records (as the engine writes them): one session
    per case and arm, rows with the given outcome, and a transcript each."""
    cases = list(outcomes)
    plan = Plan(
        run_id=run_id,
        skill="greeter",
        skill_dir="/x/greeter",
        version="sha256:" + "a" * 64,
        assets_digest="d",
        model="scripted/demo",
        judge_model="scripted/demo",
        k=1,
        seed=1,
        arms=["baseline", "candidate", "baseline-b"],
        opponents=["baseline"],
        sessions=cases,
        units=[Unit(c, c) for c in cases],
        engine_version="0",
        created_at="2026-11-30T00:00:00+00:00",
    )
    folder.mkdir(parents=True)
    (folder / "transcripts").mkdir()
    sessions, rows, journal = {}, [], []
    for case, outcome in outcomes.items():
        for arm in plan.arms:
            passed = (outcome == "win") == (arm == "candidate") if outcome != "tie" else True
            check = CheckResult(
                "file_exists: hello.txt",
                passed,
                "exists" if passed else f"hello.txt is missing in {arm}",
            )
            key = f"{case}.{arm}.1"
            events = [
                {"type": "trace_start", "case": case, "arm": arm, "rep": 1, "agent": "builtin"},
                {"type": "message", "role": "user", "text": f"Create hello.txt ({case})"},
                {"type": "tool_call", "id": "t1", "name": "bash", "arguments": {"command": "ls"}},
                {
                    "type": "tool_result",
                    "id": "t1",
                    "name": "bash",
                    "text": ATTACK,
                    "is_error": False,
                    "exit_code": 0,
                },
                {"type": "message", "role": "assistant", "text": f"{arm} done"},
                {"type": "trace_end", "stop_reason": "end_turn", "turns": 2, "duration_ms": 900},
            ]
            (folder / "transcripts" / f"{key}.jsonl").write_text(
                "".join(json.dumps(e) + "\n" for e in events)
            )
            record = SessionRecord(
                key=key,
                session=case,
                arm=arm,
                rep=1,
                outcome="pass" if passed else "fail",
                stop_reason="end_turn",
                turns=2,
                seconds=0.9,
                transcript=f"transcripts/{key}.jsonl",
                checks={case: [check]},
            )
            sessions[key] = record
            journal.append(record)
        arms = {
            a: ArmResult(
                sessions[f"{case}.{a}.1"].outcome == "pass",
                False,
                sessions[f"{case}.{a}.1"].checks[case],
            )
            for a in ("candidate", "baseline")
        }
        row = RowRecord(
            case=case,
            rep=1,
            opponent="baseline",
            outcome=outcome,
            decided_by="judge" if outcome == "tie" else "checks",
            arms=arms,
            judge_reasons=["A is clearer", "B is clearer"] if outcome == "tie" else [],
            judge_winners=["A", "B"] if outcome == "tie" else [],
        )
        rows.append(row)
        journal.append(row)
    summary = summarize(plan, sessions, rows, [])
    (folder / "plan.json").write_bytes(msgspec.json.encode(plan))
    (folder / "summary.json").write_bytes(msgspec.json.encode(summary))
    (folder / "journal.jsonl").write_bytes(
        b"".join(msgspec.json.encode(r) + b"\n" for r in journal)
    )
    return folder


OUTCOMES = {"alpha": "tie", "bravo": "win", "charlie": "loss", "delta": "win"}


def data_of(page: str) -> dict:
    block = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert block is not None
    return json.loads(block.group(1))


def test_the_page_holds_every_row_regressions_first_and_escapes_the_agents_text(
    tmp_path: Path,
) -> None:
    page = render(load_run(fixed_run(tmp_path / "run", OUTCOMES)))
    data = data_of(page)
    assert [(r["case"], r["outcome"]) for r in data["rows"]] == [
        ("charlie", "loss"),
        ("bravo", "win"),
        ("delta", "win"),
        ("alpha", "tie"),
    ]
    assert data["arms"] == ["baseline", "candidate", "baseline-b"]
    # one data block per transcript, parsed only when its row opens
    blocks = re.findall(r'<script type="application/json" id="t(\d+)">', page)
    assert len(blocks) == len(OUTCOMES) * 3
    # the agent's text cannot close a block, open a script or a comment
    assert "window.pwned" in page and ATTACK not in page
    assert page.count("<script") == 1 + len(blocks) + 1  # data, transcripts, the page's own JS
    assert "<!--" not in page and "<img" not in page
    # nothing is fetched: no URL in any src or href
    assert not re.search(r"""(src|href)=["']?https?:""", page)


def test_report_renders_every_format_from_the_run_folder(tmp_path: Path, capsys) -> None:
    run = fixed_run(tmp_path / "run", OUTCOMES)
    assert main(["report", str(run), "--format", "terminal"]) == 0
    assert capsys.readouterr().out.startswith(
        "verdict: INCONCLUSIVE (3 decided units, at least 5 needed)"
    )
    assert main(["report", str(run), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads((run / "summary.json").read_text())
    assert main(["report", str(run), "--format", "junit"]) == 0
    suite = ElementTree.fromstring(capsys.readouterr().out)
    assert (suite.get("tests"), suite.get("failures")) == ("4", "1")
    # the lost row names its failing check and the check's detail
    failure = suite.find("testcase[@name='charlie rep 1 vs baseline']/failure")
    assert failure is not None
    assert failure.get("message") == (
        "loss (checks): candidate: file_exists: hello.txt — hello.txt is missing in candidate"
    )
    assert "hello.txt is missing in candidate" in (failure.text or "")
    assert main(["report", str(run), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("### skillbench: `greeter` — INCONCLUSIVE")
    table = [line for line in md.splitlines() if line.startswith("| ") and "case" not in line]
    assert table == [
        "| charlie | 1 | baseline | **loss** | checks | "
        "candidate: file_exists: hello.txt — hello.txt is missing in candidate |",
        "| bravo | 1 | baseline | win | checks | "
        "baseline: file_exists: hello.txt — hello.txt is missing in baseline |",
        "| delta | 1 | baseline | win | checks | "
        "baseline: file_exists: hello.txt — hello.txt is missing in baseline |",
    ]
    assert "http" not in md  # a PR comment links nowhere
    assert main(["report", str(run), "--format", "html"]) == 0
    assert data_of(capsys.readouterr().out)["rows"][0]["case"] == "charlie"


def test_report_of_a_folder_that_is_not_a_finished_run_is_one_clear_line(
    tmp_path: Path, capsys
) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no readable plan.json" in err and "Traceback" not in err
    run = fixed_run(tmp_path / "run", OUTCOMES)
    (run / "summary.json").unlink()
    assert main(["report", str(run)]) == 2
    assert f"finish it with `skillbench eval --resume {run}`" in capsys.readouterr().err


def test_compare_shows_the_rows_that_changed_and_both_verdicts(tmp_path: Path, capsys) -> None:
    a = fixed_run(tmp_path / "a", OUTCOMES, "run-a")
    b = fixed_run(tmp_path / "b", {**OUTCOMES, "charlie": "win", "alpha": "win"}, "run-b")
    page = tmp_path / "compare.html"
    assert main(["compare", str(a), str(b), "--html", str(page)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "verdict: INCONCLUSIVE -> INCONCLUSIVE"  # 4 units: too few for either
    assert lines[3] == "rows: 2 changed, 2 the same"
    assert lines[4:6] == [
        "  alpha #1 vs baseline: tie (judge) -> win (checks)",
        "  charlie #1 vs baseline: loss (checks) -> win (checks)",
    ]
    assert page.read_text().count("<td>charlie</td>") == 1


def test_view_serves_the_report_on_loopback_until_interrupted(tmp_path: Path) -> None:
    run = fixed_run(tmp_path / "run", OUTCOMES)
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillbench", "view", str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split(" at ", 1)[1].split(" ", 1)[0]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/report.html")
        reply = httpx.get(url, timeout=10)
        assert reply.status_code == 200 and data_of(reply.text)["rows"][0]["case"] == "charlie"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    assert (run / "report.html").is_file()


def test_progress_lines_mark_reused_sessions(capsys) -> None:
    from skillbench.report.progress import ProgressDisplay

    display = ProgressDisplay()
    display.planned(2, 0)
    for key, reused in (("a.baseline.1", "run-0"), ("a.candidate.1", None)):
        display.finished(
            SessionRecord(
                key=key,
                session="a",
                arm=key.split(".")[1],
                rep=1,
                outcome="pass",
                turns=3,
                seconds=2.5,
                reused_from=reused,
            ),
            0.0,
        )
    assert capsys.readouterr().err.splitlines() == [
        "running 2 of 2 sessions",
        "[1/2] a.baseline.1: pass · reused from run run-0 (not run again)",
        "[2/2] a.candidate.1: pass · 3 turns · 2.5s",
    ]


def test_a_tie_the_candidate_failed_says_which_check_failed(tmp_path: Path, capsys) -> None:
    run = fixed_run(tmp_path / "run", {"alpha": "tie", "bravo": "win"})
    # both arms of alpha fail the same check: a tie, but the markdown still says why
    journal = run / "journal.jsonl"
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    for record in lines:
        if record["type"] == "row" and record["case"] == "alpha":
            for arm in record["arms"].values():
                arm["passed"] = False
                arm["checks"] = [{"name": "verifier: v.sh", "passed": False, "detail": "exit 1"}]
    journal.write_text("".join(json.dumps(x) + "\n" for x in lines))
    summary = json.loads((run / "summary.json").read_text())
    for row in summary["rows"]:
        if row["case"] == "alpha":
            row["arms"] = next(
                x["arms"] for x in lines if x.get("case") == "alpha" and x["type"] == "row"
            )
    (run / "summary.json").write_text(json.dumps(summary))
    assert main(["report", str(run), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "#### Ties where the candidate failed too (1)" in md
    assert (
        "- alpha rep 1 vs baseline: candidate: verifier: v.sh — exit 1; "
        "baseline: verifier: v.sh — exit 1"
    ) in md


def test_report_piped_into_head_exits_quietly(tmp_path: Path) -> None:
    run = fixed_run(tmp_path / "run", {f"case{i:03}": "loss" for i in range(400)})
    for fmt in ("terminal", "markdown", "html", "junit"):
        report = subprocess.Popen(
            [sys.executable, "-m", "skillbench", "report", str(run), "--format", fmt],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert report.stdout is not None
        report.stdout.readline()
        report.stdout.close()  # what `| head -1` does once it has its line
        _, err = report.communicate(timeout=60)
        assert report.returncode == 0, (fmt, err)
        assert err == b"", (fmt, err)


@pytest.fixture(params=sorted(FORMATS))
def report_format(request: pytest.FixtureRequest) -> ReportFormat:
    return FORMATS[request.param]


@pytest.fixture
def run_folder(tmp_path: Path) -> RunFolder:
    return load_run(fixed_run(tmp_path / "run", OUTCOMES))


class TestEveryFormat(ReportFormatConformance):
    """Every built-in format passes the suite a package's format must pass."""
