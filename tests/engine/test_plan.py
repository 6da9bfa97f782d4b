"""`eval --plan` (issue 15, part 4): sessions, calls, an estimated cost and time, and exit 0
without a sandbox or a model call; figures from an earlier receipt when there is one; reused
baseline sessions left out; a --max-cost below the estimate said before anything starts."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.sandbox.podman.provider import OWNER_LABEL
from tests.helpers import BASE, CAND, MODEL, conv, run_eval, skill, write_file

CASES = {
    "evals/cases/hello.yaml": "task: Create hello.txt\nchecks:\n  - file_exists: hello.txt\n",
    "evals/cases/tone.yaml": "task: Pick a tone\njudge: prefer warm\nchecks:\n  - file_exists: t\n",
    "evals/triggers.yaml": "should_trigger: [greet them]\nshould_not_trigger: [sum this]\n",
}


def containers() -> set[str]:
    """The sandboxes this test process owns (other processes share the machine's podman)."""
    owner = f"label={OWNER_LABEL}={socket.gethostname()}:{os.getpid()}"
    done = subprocess.run(
        ["podman", "ps", "-aq", "--filter", owner], capture_output=True, text=True
    )
    return set(done.stdout.split())


def plan(capsys, folder: Path, *extra: str) -> tuple[int, list[str], str]:
    code = main(["eval", str(folder), "--model", MODEL, "--plan", *extra])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_plan_starts_nothing_and_counts_what_a_run_would_do(fake, tmp_path: Path, capsys) -> None:
    folder = skill(tmp_path, CASES)
    server = fake({"conversations": []})
    before = containers()
    code, lines, _ = plan(capsys, folder, "--k", "2", "--max-cost", "0.10")
    assert code == 0
    assert lines[0].startswith("plan: greeter (sha256:") and lines[0].endswith(
        "2 case(s) x 2 arms (baseline, candidate) x k=2"
    )
    assert lines[1] == "  sessions: 8 to run"
    # 8 sessions x 6 default calls; 1 judged case x 2 reps x 1 opponent x 2 orders; 2 prompts
    assert (
        lines[2] == "  model calls: ~48 in sessions, up to 4 judge call(s), 2 trigger call(s) "
        "(catalog call)"
    )
    # 8 x 6 x (12,000 in, 600 out) + judge 4 x (6,000, 200) + triggers 2 x (800, 30) at $3/$15
    expected = (8 * 6 * 12_000 + 4 * 6_000 + 2 * 800) * 3e-6 + (
        8 * 6 * 600 + 4 * 200 + 2 * 30
    ) * 15e-6
    assert lines[3].startswith(f"  estimated cost: ~${expected:.2f}; no earlier run of greeter")
    assert lines[4] == "  estimated time: ~3 min at --parallel 4"  # 2 x 90 s, + 5 s triggers
    assert lines[5].startswith(f"  the estimated cost ~${expected:.2f} exceeds --max-cost $0.10")
    assert lines[-1] == "nothing was started (--plan)"
    assert server.log() == [] and containers() == before  # no model call, no sandbox
    assert not (tmp_path / ".skillbench").exists()


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_plan_counts_only_the_sessions_that_will_run(fake, tmp_path: Path, capsys) -> None:
    needs = "task: Use the tool\nrequires: [no-such-tool-here]\nchecks:\n  - file_exists: t\n"
    folder = skill(tmp_path, {**CASES, "evals/cases/needs.yaml": needs})
    server = fake({"conversations": []})
    before = containers()
    code, lines, _ = plan(capsys, folder, "--execution-only")
    assert code == 0
    # the case whose image lacks its tool is probed out, as the run would skip it
    assert lines[0].endswith("2 case(s) x 2 arms (baseline, candidate) x k=1")
    assert lines[1:3] == [
        "  sessions: 4 to run",
        "  skipped (environment): needs — missing no-such-tool-here",
    ]
    # judge and agent are one model here: the judge line says what that costs
    assert lines[-2] == (
        "  judge: warning: the judge and the agent are both Claude models, and a judge "
        "favours its own family's answers; set --judge-model to another family"
    )
    assert server.log() == [] and containers() == before  # the probe sandbox is gone


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_plan_after_a_run_uses_its_figures_and_its_reusable_baselines(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(tmp_path, {k: v for k, v in CASES.items() if "tone" not in k})
    fake(
        {
            "conversations": [
                conv(CAND, "Create hello", write_file("hello.txt", "hi\n"), {"text": "done"}),
                conv(BASE, "Create hello", {"text": "no"}),
            ]
        }
    )
    code, _, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert code == 3  # one unit: INCONCLUSIVE
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\nMore.\n")
    code, lines, _ = plan(capsys, folder, "--execution-only")
    assert code == 0
    assert (
        lines[1] == "  sessions: 1 to run (1 baseline/incumbent session(s) reused from "
        "earlier runs)"
    )
    assert lines[3].endswith(f"per-session figures from run {summary['run_id']} of greeter")
    turns = (
        summary["efficiency"]["baseline"]["turns"] + summary["efficiency"]["candidate"]["turns"]
    ) / 2
    assert lines[2].startswith(f"  model calls: ~{turns:.0f} in sessions, up to 0 judge call(s)")


def test_a_max_cost_under_the_estimate_is_said_before_the_run_starts(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = skill(tmp_path, CASES)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # the run itself is then refused
    code = main(["eval", str(folder), "--model", MODEL, "--max-cost", "0.01", "--no-gen"])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.splitlines()
    assert lines[0].startswith("note: the estimated cost ~$")
    assert "exceeds --max-cost $0.01" in lines[0]
    assert "ANTHROPIC_API_KEY is not set" in err


def test_plan_and_resume_exclude_each_other(tmp_path: Path, capsys) -> None:
    assert main(["eval", "--resume", str(tmp_path), "--plan"]) == 2
    assert "--plan and --resume exclude each other" in capsys.readouterr().err
