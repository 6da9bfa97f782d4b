"""`skillbench eval` end to end: real podman sandboxes, the real SDKs against the fake model
server, the CLI's report and summary.json."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from skillbench.cli import main
from skillbench.sandbox.podman.provider import LABEL, OWNER_LABEL
from tests.helpers import (
    BASE,
    CAND,
    MODEL,
    bash,
    conv,
    run_eval,
    skill,
    write_file,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]


def by_case(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{r['case']}.{r['opponent']}.{r['rep']}": r for r in summary["rows"]}


JUDGE_RULES = [
    # the judge prefers the attempt holding the candidate's marker, whichever label it has
    {
        "when": r"(?s)Rubric\nprefer-marked.*Attempt A \(transcript tail\)\n[^#]*MARKED",
        "replies": ['{"nonce": "$FRAME_ID", "winner": "A", "reason": "marked"}'],
    },
    {
        "when": r"(?s)Rubric\nprefer-marked.*Attempt B \(transcript tail\)\n[^#]*MARKED",
        "replies": [
            'Sure. ```json\n{"nonce": "$FRAME_ID", "winner": "B", "reason": "marked"}\n```'
        ],
    },
    # a judge that always says A disagrees with itself once the order is swapped
    {
        "when": r"(?s)Rubric\nalways-a",
        "replies": ['{"nonce": "$FRAME_ID", "winner": "A", "reason": "first"}'],
    },
]


def test_checks_judge_split_and_skip(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/hello.yaml": "task: Create hello.txt\nchecks:\n  - file_exists: hello.txt\n  - command_succeeds: grep -q hello hello.txt\n",
            "evals/cases/polish.yaml": "task: Polish the greeting\njudge: prefer-marked\nchecks:\n  - transcript_mentions: greeting\n",
            "evals/cases/style.yaml": "task: Style the greeting\njudge: always-a\nchecks:\n  - transcript_mentions: greeting\n",
            "evals/cases/needs-codex.yaml": "task: Use codex\nrequires: [codex]\nchecks:\n  - file_exists: x\n",
            "evals/triggers.yaml": "should_trigger: [greet everyone]\nshould_not_trigger: [rename this variable]\n",
        },
    )
    trigger_rules = [
        {
            "when": "User request:\n(greet everyone|rename this variable)",
            "replies": ['{"nonce": "$FRAME_ID", "selected": ["greeter"]}'],
        }
    ]
    server = fake(
        {
            "rules": JUDGE_RULES + trigger_rules,
            "conversations": [
                conv(CAND, "Create hello", write_file("hello.txt", "hello\n"), {"text": "done"}),
                conv(BASE, "Create hello", {"text": "I would need more information."}),
                conv(CAND, "Polish", {"text": "MARKED greeting polished"}),
                conv(BASE, "Polish", {"text": "greeting polished"}),
                conv("(?s)", "Style", {"text": "greeting styled"}),
            ],
        }
    )
    code, lines, summary = run_eval(
        capsys, folder, tmp_path / "run", "--junit", str(tmp_path / "eval.xml")
    )
    assert code == 3  # INCONCLUSIVE: three cases are too few units for a verdict
    rows = by_case(summary)
    suite = ElementTree.parse(tmp_path / "eval.xml").getroot()
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        "skillbench eval greeter: INCONCLUSIVE",
        "4",
        "0",
        "1",
    )
    assert [c.get("name") for c in suite] == [
        "hello rep 1 vs baseline",
        "polish rep 1 vs baseline",
        "style rep 1 vs baseline",
        "needs-codex rep 1 vs baseline",
    ]
    assert (rows["hello.baseline.1"]["outcome"], rows["hello.baseline.1"]["decided_by"]) == (
        "win",
        "checks",
    )
    assert (rows["polish.baseline.1"]["outcome"], rows["polish.baseline.1"]["decided_by"]) == (
        "win",
        "judge",
    )
    assert (rows["style.baseline.1"]["outcome"], rows["style.baseline.1"]["decided_by"]) == (
        "tie",
        "judge-split",
    )
    hello = rows["hello.baseline.1"]["arms"]
    assert hello["candidate"]["passed"] and not hello["baseline"]["passed"]
    assert [c["passed"] for c in hello["baseline"]["checks"]] == [False, False]
    assert summary["comparisons"]["baseline"] == {
        "win": 2,
        "loss": 0,
        "tie": 1,
        "net_lift": pytest.approx(2 / 3),
        "sign_p": 0.25,  # one-sided, over the 2 decided units
        "units": {"win": 2, "loss": 0, "tie": 1},
        "verdict": "INCONCLUSIVE",
    }
    assert (summary["expected_rows"], summary["scored_rows"], summary["verdict"]) == (
        4,
        3,
        "INCONCLUSIVE",
    )
    # both arms mention "greeting" in polish and style: those checks cannot discriminate
    assert {(d["kind"], d["case"], d["check"]) for d in summary["diagnostics"]} == {
        ("non-discriminating", "polish", "transcript_mentions: greeting"),
        ("non-discriminating", "style", "transcript_mentions: greeting"),
        ("judge-position", "", None),
        ("never-fired", "", None),  # the scripted candidate never loads the skill
    }
    # the marked-preferring judge named the candidate wherever it stood (one A, one B); the
    # always-A judge named the first attempt twice: 3 of 4 answers went to the first position
    position = next(d for d in summary["diagnostics"] if d["kind"] == "judge-position")
    assert position["detail"] == "the judge picked the attempt shown first in 3 of 4 answers (75%)"
    power = summary["stats"]["baseline"]
    assert (power["decided"], power["needed"], power["underpowered"]) == (2, 5, True)
    assert power["pass_rate"]["candidate"]["value"] == 1.0  # 3 of 3 unit runs
    assert power["net_lift_ci"]["value"] == pytest.approx(2 / 3)
    assert power["pass_at_k"] is None  # k = 1
    assert summary["skipped"] == [
        {
            "case": "needs-codex",
            "reason": "missing codex",
            "environment": True,
            "units": ["needs-codex"],
        }
    ]
    # a case the image cannot run does not make the run incomplete; the receipt says so
    receipt = json.loads((tmp_path / "run/receipt.json").read_text())
    assert (receipt["complete"], receipt["driver"], receipt["agent"], receipt["models"]) == (
        True,
        "model",
        "builtin",
        {"agent": MODEL, "judge": MODEL},
    )
    assert (receipt["expected_rows"], receipt["scored_rows"]) == (4, 3)
    assert (
        summary["why"] == "wins on execution checks and the judge's rubric; 1 tie (1 judge-split)"
    )
    assert lines[:7] == [
        "verdict: INCONCLUSIVE [partial — 3/4 scored] (2 decided units, at least 5 needed)",
        "why: wins on execution checks and the judge's rubric; 1 tie (1 judge-split)",
        "skipped (environment): needs-codex — missing codex",
        "candidate-vs-baseline: 2W/0L/1T rows · 2 of 3 units decided (2W/0L) · net lift +67% · "
        "sign test p=0.250",
        "activation: fired in 0 of 3 candidate sessions · net lift n/a where it fired (0 units) "
        "vs +67% overall",
        "ambient skills: none in any arm (the builtin loop lists only the staged skills)",
        "arm scores: baseline 0.67 · candidate 1.00",
    ]
    assert lines[7] == "case-runs passed: baseline 2/3 · candidate 3/3"
    assert lines[8:10] == [
        "triggers (catalog call): recall=1.00 precision=0.50 (tp=1 fn=0 fp=1 tn=0)",
        '  FALSE-FIRE: "rename this variable"',
    ]
    assert lines[10].startswith("efficiency: baseline 1.0 turns · ") and "$" in lines[10]
    # the run total includes the judge's and the trigger calls, beyond the arms' sessions
    assert lines[10].endswith(f"· run total ${summary['spend_usd']:.2f}")
    receipt_spend = json.loads((tmp_path / "run/receipt.json").read_text())["spend_usd"]
    assert receipt_spend == summary["spend_usd"] > 0
    assert {
        k: summary["triggers"][k]
        for k in ("recall", "precision", "tp", "fn", "fp", "tn", "misses", "false_fires")
    } == {
        "recall": 1.0,
        "precision": 0.5,
        "tp": 1,
        "fn": 0,
        "fp": 1,
        "tn": 0,
        "misses": [],
        "false_fires": ["rename this variable"],
    }
    # both judge orders were asked for every judged row (2 rows x 2 orders)
    judge_calls = [r for r in server.log() if "## Rubric" in json.dumps(r.body)]
    assert len(judge_calls) == 4
    # the run folder holds what docs/results.md promises
    run = tmp_path / "run"
    assert {p.name for p in run.iterdir()} >= {
        "plan.json",
        "journal.jsonl",
        "transcripts",
        "summary.json",
        "workspaces",
    }
    assert (run / "workspaces/hello.baseline.1").is_dir()  # a failed arm's workspace is kept
    assert (run / "transcripts/hello.candidate.1.jsonl").is_file()
    plan = json.loads((run / "plan.json").read_text())
    assert plan["seed"] == 7 and plan["model"] == MODEL


def test_suite_scores_six_subcases_from_one_session_per_arm(fake, tmp_path: Path, capsys) -> None:
    suite = """
task: Review the change in /work/app.py
files:
  app.py: "def add(a, b):\\n    return a - b\\n"
cases:
  - name: finds-sign-bug
    checks: [{transcript_mentions: "a - b"}]
  - name: names-function
    checks: [{transcript_mentions: "add("}]
  - name: writes-review
    checks: [{file_exists: review.md}]
  - name: reads-file
    checks: [{command_matching: "cat app.py"}]
  - name: no-rm
    checks: [{no_command_matching: "rm -rf"}]
  - name: ignores-distractor
    checks: [{transcript_omits: "distractor"}]
"""
    folder = skill(tmp_path, {"evals/suite.yaml": suite})
    server = fake(
        {
            "conversations": [
                conv(
                    CAND,
                    "Review",
                    bash("cat app.py"),
                    write_file("review.md", "add(): a - b should be a + b"),
                    {"text": "Found it."},
                ),
                conv(BASE, "Review", bash("cat app.py"), {"text": "Looks fine to me."}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run")
    assert code == 3  # one suite is one unit: INCONCLUSIVE
    outcomes = {r["case"]: r["outcome"] for r in summary["rows"]}
    assert outcomes == {
        "suite/finds-sign-bug": "win",
        "suite/names-function": "win",
        "suite/writes-review": "win",
        "suite/reads-file": "tie",
        "suite/no-rm": "tie",
        "suite/ignores-distractor": "tie",
    }
    assert all(r["decided_by"] == "checks" for r in summary["rows"])
    assert (summary["expected_rows"], summary["scored_rows"], summary["verdict"]) == (
        6,
        6,
        "INCONCLUSIVE",
    )
    first_turns = [
        r for r in server.log() if not any(m["role"] == "assistant" for m in r.body["messages"])
    ]
    assert len(first_turns) == 2  # one session per arm
    assert lines[0] == "verdict: INCONCLUSIVE (1 decided unit, at least 5 needed)"
    assert lines[2:7] == [
        "candidate-vs-baseline: 3W/0L/3T rows · 1 of 1 unit decided (1W/0L) · net lift +100% · "
        "sign test p=0.500",
        "activation: fired in 0 of 1 candidate session · net lift n/a where it fired (0 units) "
        "vs +100% overall",
        "ambient skills: none in any arm (the builtin loop lists only the staged skills)",
        "arm scores: baseline 0.50 · candidate 1.00",
        "case-runs passed: baseline 3/6 · candidate 6/6",
    ]


def test_errored_arm_is_retried_once_and_unscored(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/a-flaky.yaml": "task: Flaky greeting\nchecks: [{file_exists: g.txt}]\n",
            "evals/cases/b-fine.yaml": "task: Fine greeting\nchecks: [{file_exists: g.txt}]\n",
        },
    )
    fake(
        {
            "conversations": [
                conv(
                    BASE,
                    "Flaky",
                    {"text": "x", "faults": [{"status": 500, "times": 100, "retry_after": 0.01}]},
                ),
                conv("(?s)", "Flaky", write_file("g.txt", "hi"), {"text": "done"}),
                conv(CAND, "Fine", write_file("g.txt", "hi"), {"text": "done"}),
                conv(BASE, "Fine", {"text": "no"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run")
    assert code == 3
    rows = by_case(summary)
    flaky = rows["a-flaky.baseline.1"]
    assert (flaky["outcome"], flaky["decided_by"]) == ("unscored", "unscored")
    assert flaky["arms"]["baseline"]["error"] and flaky["arms"]["candidate"]["passed"]
    assert summary["comparisons"]["baseline"]["loss"] == 0
    assert (summary["scored_rows"], summary["expected_rows"]) == (1, 2)
    journal = [
        json.loads(line) for line in (tmp_path / "run/journal.jsonl").read_text().splitlines()
    ]
    errored = next(j for j in journal if j.get("key") == "a-flaky.baseline.1")
    assert (errored["outcome"], errored["attempts"]) == ("error", 2)
    assert "infrastructure" in errored["error"]
    assert (tmp_path / "run/transcripts/a-flaky.baseline.1.attempt1.jsonl").is_file()
    assert lines[1] == "why: wins on execution checks; 1 unscored (infrastructure errors)"


def test_agent_cannot_read_evals_reach_network_or_write_skill(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/probe.yaml": "task: Probe around\nchecks:\n  - transcript_omits: EVALS-SECRET-42\n",
            "evals/EVALS-SECRET-42.txt": "EVALS-SECRET-42",
        },
    )
    fake(
        {
            "conversations": [
                conv(
                    "(?s)",
                    "Probe",
                    bash(
                        "grep -rl EVALS-SECRET-42 / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; find / -name 'probe.yaml' -not -path '/proc/*' 2>/dev/null; echo searched"
                    ),
                    bash(
                        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\""
                    ),
                    bash(
                        "echo pwned >> /skills/greeter/SKILL.md || echo pwned > /work/skill-probe.txt"
                    ),
                    {"text": "finished probing"},
                )
            ]
        }
    )
    code, _, summary = run_eval(capsys, folder, tmp_path / "run")
    assert code == 3  # one tied unit: INCONCLUSIVE
    for arm in ("baseline", "candidate"):
        trace = [
            json.loads(x)
            for x in (tmp_path / f"run/transcripts/probe.{arm}.1.jsonl").read_text().splitlines()
        ]
        results = [e["text"] for e in trace if e["type"] == "tool_result"]
        assert results[0] == "searched\n[exit code 0]"  # nothing found anywhere
        assert "Network is unreachable" in results[1]
        if arm == "candidate":
            assert "Permission denied" in results[2]
    assert (folder / "SKILL.md").read_text().count("pwned") == 0
    assert summary["rows"][0]["outcome"] == "tie"


def test_a_check_the_image_cannot_run_is_unscored_not_a_tie(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/a-gap.yaml": "task: Greeting gap\nchecks:\n"
            "  - file_exists: g.txt\n  - command_succeeds: no-such-tool-here --check g.txt\n",
            "evals/cases/b-fine.yaml": "task: Greeting fine\nchecks: [{file_exists: g.txt}]\n",
        },
    )
    fake(
        {
            "conversations": [
                conv(CAND, "Greeting", write_file("g.txt", "hi"), {"text": "done"}),
                conv(BASE, "Greeting", {"text": "no"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run")
    assert code == 3
    gap = by_case(summary)["a-gap.baseline.1"]
    assert (gap["outcome"], gap["decided_by"]) == ("unscored", "environment-gap")
    assert gap["reason"].startswith(
        "environment gap: command_succeeds: no-such-tool-here --check g.txt could not run in "
        "either arm (exit 127"
    )
    assert summary["comparisons"]["baseline"]["units"] == {"win": 1, "loss": 0, "tie": 0}
    assert lines[1] == (
        "why: wins on execution checks; 1 unscored (environment gap: a check could not run "
        "in either arm)"
    )
    receipt = json.loads((tmp_path / "run/receipt.json").read_text())
    assert (receipt["complete"], receipt["scored_rows"], receipt["expected_rows"]) == (
        False,
        1,
        2,
    )


def test_bad_assets_stop_before_any_model_call(fake, tmp_path: Path, capsys) -> None:
    folder = skill(tmp_path, {"evals/cases/bad.yaml": "task: t\ntiemout_minutes: 3\n"})
    server = fake({"conversations": []})
    code = main(
        [
            "eval",
            str(folder),
            "--model",
            MODEL,
            "--out",
            str(tmp_path / "run"),
            "--quiet",
            "--no-gen",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and server.log() == []
    assert "bad.yaml:2: error: unknown field `tiemout_minutes`" in err


def test_sigkill_mid_run_then_resume_reruns_only_what_is_missing(fake, tmp_path: Path) -> None:
    cases = {
        f"evals/cases/c{i}.yaml": f"task: Greeting number {i}\nchecks: [{{file_exists: g.txt}}]\n"
        for i in range(4)
    }
    folder = skill(tmp_path, cases)
    fake(
        {
            "latency": 0.4,
            "conversations": [
                conv(CAND, "Greeting number", write_file("g.txt", "hi"), {"text": "done"}),
                conv(BASE, "Greeting number", {"text": "no"}),
            ],
        }
    )
    out = tmp_path / "run"
    argv = [
        sys.executable,
        "-m",
        "skillbench",
        "eval",
        str(folder),
        "--model",
        MODEL,
        "--out",
        str(out),
        "--parallel",
        "1",
        "--quiet",
        "--no-gen",
    ]
    proc = subprocess.Popen(
        argv,
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = [json.loads(x) for x in journal.read_text().splitlines()] if journal.exists() else []
        if sum(1 for d in done if d["type"] == "session") >= 3:
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {
        d["key"]: d
        for d in (json.loads(x) for x in journal.read_text().splitlines())
        if d["type"] == "session"
    }
    assert 3 <= len(before) < 8
    mtimes = {k: (out / v["transcript"]).stat().st_mtime_ns for k, v in before.items()}
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillbench",
            "eval",
            "--resume",
            str(out),
            "--model",
            MODEL,
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 3, resumed.stderr  # INCONCLUSIVE: 4 units
    sessions = [json.loads(x) for x in journal.read_text().splitlines()]
    keys = [d["key"] for d in sessions if d["type"] == "session"]
    assert sorted(keys) == sorted(
        f"c{i}.{arm}.1" for i in range(4) for arm in ("baseline", "candidate")
    )
    assert len(keys) == len(set(keys))  # nothing finished was run again
    assert all((out / before[k]["transcript"]).stat().st_mtime_ns == m for k, m in mtimes.items())
    summary = json.loads((out / "summary.json").read_text())
    assert (
        summary["verdict"],
        summary["scored_rows"],
        summary["comparisons"]["baseline"]["win"],
    ) == ("INCONCLUSIVE", 4, 4)
    assert resumed.stdout.splitlines()[0] == (
        "verdict: INCONCLUSIVE (4 decided units, at least 5 needed)"
    )
    # the killed run's sandboxes were swept by the resumed one
    from podman import PodmanClient

    with PodmanClient(base_url=os.environ["SKILLBENCH_PODMAN_URL"]) as client:
        owners = [
            c.labels.get(OWNER_LABEL, "")
            for c in client.containers.list(all=True, filters={"label": LABEL})
        ]
    assert not any(o.endswith(f":{proc.pid}") for o in owners)


def test_resume_refuses_a_changed_skill(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path, {"evals/cases/a.yaml": "task: Greeting\nchecks: [{file_exists: g.txt}]\n"}
    )
    fake({"conversations": [conv("(?s)", "Greeting", {"text": "no"})]})
    run_eval(capsys, folder, tmp_path / "run")
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\nmore\n")
    code = main(["eval", "--resume", str(tmp_path / "run"), "--model", MODEL, "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "refused, the skill's files (version) changed" in err


def test_triggers_only_and_exclusive_flags(fake, tmp_path: Path, capsys) -> None:
    folder = skill(tmp_path, {"evals/triggers.yaml": "should_trigger: [greet everyone]\n"})
    server = fake(
        {
            "rules": [
                {"when": "greet everyone", "replies": ['{"nonce": "$FRAME_ID", "selected": []}']}
            ]
        }
    )
    assert main(["eval", str(folder), "--model", MODEL, "--triggers-only"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "triggers (catalog call): recall=0.00 precision=n/a (tp=0 fn=1 fp=0 tn=0)",
        '  MISS: "greet everyone"',
    ]
    assert len(server.log()) == 1
    assert main(["eval", str(folder), "--triggers-only", "--execution-only"]) == 2
    assert "exclude each other" in capsys.readouterr().err


def test_max_cost_stops_scheduling_and_reports_partial(fake, tmp_path: Path, capsys) -> None:
    cases = {
        f"evals/cases/c{i}.yaml": f"task: Greeting number {i}\nchecks: [{{file_exists: g.txt}}]\n"
        for i in range(3)
    }
    folder = skill(tmp_path, cases)
    fake(
        {
            "conversations": [
                conv(CAND, "Greeting number", write_file("g.txt", "hi"), {"text": "done"}),
                conv(BASE, "Greeting number", {"text": "no"}),
            ]
        }
    )
    code, lines, summary = run_eval(
        capsys, folder, tmp_path / "run", "--parallel", "1", "--max-cost", "0.000001"
    )
    assert code == 2  # nothing could be scored
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    sessions = [j for j in journal if j["type"] == "session"]
    # the run's ledger refuses the first call its ceiling cannot cover: nothing is spent past it
    assert len(sessions) == 1 and sessions[0]["stop_reason"] == "budget"
    assert sessions[0]["outcome"] == "error" and sessions[0]["attempts"] == 1  # not run, not a loss
    assert (sessions[0]["cost_usd"] or 0.0) <= 0.000001
    assert summary["stopped"] == "spend reached the --max-cost cap $0.00"
    assert summary["scored_rows"] == 0 and summary["expected_rows"] == 3
    assert lines[:3] == [
        "verdict: NONE (nothing scored)",
        "why: nothing scored; spend reached the --max-cost cap $0.00",
        "stopped: spend reached the --max-cost cap $0.00",
    ]
    receipt = json.loads((tmp_path / "run/receipt.json").read_text())
    assert (receipt["verdict"], receipt["complete"]) == ("NONE", False)


def test_ctrl_c_removes_sandboxes_and_points_at_resume(fake, tmp_path: Path) -> None:
    folder = skill(
        tmp_path, {"evals/cases/slow.yaml": "task: Slow greeting\nchecks: [{file_exists: g.txt}]\n"}
    )
    fake({"conversations": [conv("(?s)", "Slow greeting", bash("sleep 60"), {"text": "done"})]})
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skillbench",
            "eval",
            str(folder),
            "--model",
            MODEL,
            "--out",
            str(out),
            "--quiet",
            "--no-gen",
        ],
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list((out / "transcripts").glob("*.jsonl")):
        time.sleep(0.1)
    time.sleep(1.0)  # the sleeps are running in their sandboxes now
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert f"Continue with: skillbench eval --resume {out}" in err
    from podman import PodmanClient

    with PodmanClient(base_url=os.environ["SKILLBENCH_PODMAN_URL"]) as client:
        owners = [
            c.labels.get(OWNER_LABEL, "")
            for c in client.containers.list(all=True, filters={"label": LABEL})
        ]
    assert not any(o.endswith(f":{proc.pid}") for o in owners)


def test_relative_out_and_skill_paths(fake, tmp_path: Path, capsys, monkeypatch) -> None:
    folder = skill(
        tmp_path, {"evals/cases/a.yaml": "task: Greeting\nchecks: [{file_exists: g.txt}]\n"}
    )
    fake(
        {
            "conversations": [
                conv(CAND, "Greeting", write_file("g.txt", "hi"), {"text": "done"}),
                conv(BASE, "Greeting", {"text": "no"}),
            ]
        }
    )
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "eval",
            str(folder.relative_to(tmp_path)),
            "--model",
            MODEL,
            "--out",
            "runs/rel",
            "--quiet",
            "--no-gen",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 3 and lines[0] == "verdict: INCONCLUSIVE (1 decided unit, at least 5 needed)"
    assert json.loads((tmp_path / "runs/rel/summary.json").read_text())["scored_rows"] == 1


def test_resume_retries_errored_sessions(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path, {"evals/cases/a.yaml": "task: Greeting\nchecks: [{file_exists: g.txt}]\n"}
    )
    outage = fake(
        {
            "conversations": [
                conv(
                    BASE,
                    "Greeting",
                    {"text": "x", "faults": [{"status": 503, "times": 100, "retry_after": 0.01}]},
                ),
                conv(CAND, "Greeting", write_file("g.txt", "hi"), {"text": "done"}),
            ]
        }
    )
    code, _, summary = run_eval(capsys, folder, tmp_path / "run")
    assert code == 2 and summary["rows"][0]["decided_by"] == "unscored"
    outage.stop()
    fake(  # the provider back, at the same endpoint (a resume refuses another one)
        {
            "conversations": [
                conv(BASE, "Greeting", {"text": "no"}),
                conv(CAND, "Greeting", write_file("g.txt", "hi"), {"text": "done"}),
            ]
        },
        port=int(outage.url.rsplit(":", 1)[1]),
    )
    code = main(
        ["eval", "--resume", str(tmp_path / "run"), "--model", MODEL, "--quiet", "--no-gen"]
    )
    first = capsys.readouterr().out.splitlines()[0]
    assert code == 3 and first == "verdict: INCONCLUSIVE (1 decided unit, at least 5 needed)"
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    keys = [j["key"] for j in journal if j["type"] == "session"]
    assert (
        keys.count("a.baseline.1") == 2 and keys.count("a.candidate.1") == 1
    )  # only the error reran


def test_k_repetitions_and_case_filter(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/a.yaml": "task: Greeting A\nchecks: [{file_exists: g.txt}]\n",
            "evals/cases/b.yaml": "task: Greeting B\nchecks: [{file_exists: g.txt}]\n",
        },
    )
    server = fake(
        {
            "conversations": [
                conv(CAND, "Greeting", write_file("g.txt", "hi"), {"text": "done"}),
                conv(BASE, "Greeting", {"text": "no"}),
            ]
        }
    )
    code, _, summary = run_eval(capsys, folder, tmp_path / "run", "--k", "2", "--case", "b")
    assert code == 3  # two repetitions of one case: one unit
    assert [(r["case"], r["rep"], r["outcome"]) for r in summary["rows"]] == [
        ("b", 1, "win"),
        ("b", 2, "win"),
    ]
    assert (summary["expected_rows"], summary["k"]) == (2, 2)
    first_turns = [
        r for r in server.log() if not any(m["role"] == "assistant" for m in r.body["messages"])
    ]
    assert len(first_turns) == 4 and all("Greeting B" in json.dumps(r.body) for r in first_turns)
    assert (
        main(["eval", str(folder), "--model", MODEL, "--case", "zzz", "--no-gen", "--quiet"]) == 2
    )
    assert "--case zzz: no such case (cases: a, b)" in capsys.readouterr().err
