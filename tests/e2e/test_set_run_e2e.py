"""Set runs end to end in real podman sandboxes with the scripted driver: a library × two
models whose scripts differ (PASS in one cell, FAIL in the other), one pool and baseline
sessions shared across the cells; a library × builtin and Claude Code through the CLI, its
table, --json, every cell a complete run folder, and --resume of the set."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import skillbench
from skillbench.cli import main
from skillbench.results.cellset import read_set, write_set
from skillbench.results.records import SessionRecord
from tests.helpers import MODEL, make_skill, write

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

SKILLS = ("greeter", "shouter")
CANDIDATE = r"- (greeter|shouter): "  # only a candidate's skills listing names its skill
BASELINE = r"(?s)\A(?!.*- (greeter|shouter): )"


def made(i: int) -> dict[str, Any]:
    return {"tool_calls": [{"write_file": {"path": f"out{i}.txt", "content": "hi\n"}}]}


def said(text: str) -> dict[str, Any]:
    return {"text": text}


def conversation(when: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"when": when, "steps": [*steps, said("done")]}


def scripts(folder: Path, cases: int) -> Path:
    """Two scripted models: with `good` the candidate makes each case's file and the
    baseline does not; with `bad` it is the other way round. `cc` plays Claude Code's tools."""
    good = [conversation(f"(?s){CANDIDATE}.*Create out{i}.txt", made(i)) for i in range(cases)]
    bad = [conversation(f"{BASELINE}.*Create out{i}.txt", made(i)) for i in range(cases)]
    cc = [
        conversation(
            f"(?s)cc_entrypoint=.*{CANDIDATE}.*Create out{i}.txt",
            {"tool_calls": [{"Write": {"file_path": f"/work/out{i}.txt", "content": "hi\n"}}]},
        )
        for i in range(cases)
    ]
    rest = [conversation("(?s)Create out", said("I would need more information."))]
    for name, convs in (("good", good), ("bad", bad), ("cc", cc + good)):
        (folder / f"{name}.yaml").write_text(yaml.safe_dump({"conversations": convs + rest}))
    return folder


def library(root: Path, cases: int) -> Path:
    """Two skills with the same cases: their baseline sessions are identical."""
    files = {
        f"evals/cases/c{i}.yaml": f"task: Create out{i}.txt\nchecks:\n  - file_exists: out{i}.txt\n"
        for i in range(cases)
    }
    for name in SKILLS:
        make_skill(root / "skills", name, dict(files))
    write(root, {"skillbench.toml": "max_retries = 1\nrequest_timeout = 10.0\n"})
    return root / "skills"


class Counting:
    """A Progress that counts sessions running at once across every cell."""

    def __init__(self) -> None:
        self.running = self.most = self.count = 0

    def planned(self, total: int, done: int) -> None:
        pass

    def started(self, key: str) -> None:
        self.running += 1
        self.count += 1
        self.most = max(self.most, self.running)

    def finished(self, record: SessionRecord, spend: float) -> None:
        self.running -= 1


def test_two_scripted_models_give_their_own_verdicts_in_one_pool(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("SKILLBENCH_SCRIPTS", str(scripts(tmp_path, 5)))
    skills = library(tmp_path, 5)
    out = tmp_path / "set"
    counting = Counting()
    result = skillbench.evaluate_set(
        [skills],
        models=["scripted/good", "scripted/bad"],
        options=skillbench.Options(
            parallel=2, generate=False, triggers=False, out=str(out), seed=7
        ),
        progress=counting,
    )
    verdicts = {c.cell.id: c.result.summary.verdict for c in result.cells if c.result}
    assert verdicts == {
        "greeter@builtin@scripted/good": "PASS",
        "greeter@builtin@scripted/bad": "FAIL",
        "shouter@builtin@scripted/good": "PASS",
        "shouter@builtin@scripted/bad": "FAIL",
    }
    # one pool of --parallel 2 across the four cells' sessions, not two per cell
    assert (counting.most, counting.count) == (2, 40)
    # the two skills' baseline sessions are the same sessions: each ran once per model, and
    # the other skill's cell reused it (its checks run again on the kept workspace)
    by_id = {c.cell.id: c.result for c in result.cells if c.result}
    for model in ("good", "bad"):
        a, b = (by_id[f"{s}@builtin@scripted/{model}"] for s in SKILLS)
        reused = [r.summary.reused for r in (a, b)]
        assert sorted(r.sessions if r else 0 for r in reused) == [0, 5], model
        runs = {r.summary.run_id for r in (a, b)}
        assert {run for r in reused if r for run in r.runs} < runs
    cells = read_set(out)
    assert [c.status for c in cells.cells] == ["done"] * 4
    plan = json.loads((out / "plan.json").read_text())
    assert (plan["kind"], len(plan["cells"]), plan["sessions"]) == ("set", 4, 40)
    for cell in cells.cells:  # each cell is an ordinary run folder
        folder = out / cell.run
        receipt = json.loads((folder / "receipt.json").read_text())
        assert (receipt["skill"], receipt["agent"]) == (cell.skill, "builtin")
        assert receipt["provenance"]["models"]["agent"] == cell.model
        assert json.loads((folder / "plan.json").read_text())["model"] == cell.model


def test_a_library_in_builtin_and_claude_code_then_resume(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("SKILLBENCH_SCRIPTS", str(scripts(tmp_path, 1)))
    skills = library(tmp_path, 1)
    out = tmp_path / "set"
    argv = ["eval", str(skills), "--agent", "builtin,claude-code", "--model", "scripted/cc"]
    argv += ["--no-gen", "--execution-only", "--quiet", "--seed", "7", "--out", str(out)]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 3, captured.err  # one case per cell: INCONCLUSIVE, as for one skill
    table = captured.out.splitlines()  # the matrix, as `report SETDIR` renders it
    rows = [line.split() for line in table[2:6]]
    assert [r[:2] for r in rows] == [
        ["greeter@builtin@scripted/cc", "INCONCLUSIVE"],
        ["greeter@claude-code@scripted/cc", "INCONCLUSIVE"],
        ["shouter@builtin@scripted/cc", "INCONCLUSIVE"],
        ["shouter@claude-code@scripted/cc", "INCONCLUSIVE"],
    ]
    # net lift +100% over the one decided unit of one unit, each cell its own
    assert all(r[2] == "+100%" and r[5] == "1/1" for r in rows), table
    assert table[-2:] == [f"set: {out}", f"report: {out / 'report.html'}"]
    assert (out / "report.html").is_file()
    cells = read_set(out).cells
    for cell in cells:
        folder = out / cell.run
        assert {"summary.json", "receipt.json", "report.html", "plan.json"} <= {
            p.name for p in folder.iterdir()
        }
        summary = json.loads((folder / "summary.json").read_text())
        assert (summary["agent"], summary["comparisons"]["baseline"]["win"]) == (cell.agent, 1)
    # a crash in the middle of one cell: its summary never written, its last session lost
    lost = next(c for c in cells if c.agent == "claude-code")
    folder = out / lost.run
    kept = {c.run: (out / c.run / "summary.json").stat().st_mtime_ns for c in cells if c != lost}
    (folder / "summary.json").unlink()
    (folder / "receipt.json").unlink()
    journal = (folder / "journal.jsonl").read_text().splitlines(keepends=True)
    (folder / "journal.jsonl").write_text("".join(journal[:1]))
    state = read_set(out)
    for cell in state.cells:
        if cell.id == lost.id:
            cell.status = "pending"
    write_set(out, state)
    code = main(["eval", "--resume", str(out), "--quiet", "--json", "--execution-only"])
    captured = capsys.readouterr()
    assert code == 3, captured.err
    every = json.loads(captured.out)  # as `report SETDIR --format json`: every cell
    assert [c["status"] for c in every["cells"]] == ["done"] * 4
    assert [c.status for c in read_set(out).cells] == ["done"] * 4
    again = next(c for c in every["cells"] if c["id"] == lost.id)["summary"]
    assert again["comparisons"]["baseline"]["win"] == 1
    # the resumed cell ran only its missing session; the other cells were not run again
    lines = (folder / "journal.jsonl").read_text().splitlines()
    sessions = [json.loads(line) for line in lines if line.startswith('{"type":"session"')]
    assert [s["key"] for s in sessions] == [json.loads(journal[0])["key"], sessions[1]["key"]]
    assert len(sessions) == 2
    assert {
        c.run: (out / c.run / "summary.json").stat().st_mtime_ns for c in cells if c != lost
    } == kept


def test_one_max_cost_ledger_for_the_whole_set(fake, tmp_path: Path) -> None:
    # every output token at 1/8192 USD: a builtin turn's worst case (8192 tokens) is $1, what
    # the fake server bills is a few thousandths; the cap leaves room for about 1.5 cells (a
    # model the price table does not know: a known one is never priced below its list price)
    skills = library(tmp_path, 3)
    price = '[prices."anthropic/claude-ledger-test"]\ninput = 0.0\noutput = 122.0703125\n'
    write(tmp_path, {"skillbench.toml": "max_retries = 1\nrequest_timeout = 10.0\n" + price})
    fake(
        {
            "conversations": [
                conversation(f"(?s){CANDIDATE}.*Create out{i}.txt", made(i)) for i in range(3)
            ]
            + [conversation("(?s)Create out", said("no"))]
        }
    )

    def run(out: str, max_cost: float | None) -> skillbench.SetResult:
        options = skillbench.Options(
            model="anthropic/claude-ledger-test",
            parallel=1,
            generate=False,
            triggers=False,
            fresh_baseline=True,  # every session runs: none is served from the first set
            out=str(tmp_path / out),
            max_cost=max_cost,
        )
        return skillbench.evaluate_set([skills], options=options)

    free = run("free", None)
    cell = max(c.result.summary.spend_usd for c in free.cells if c.result)
    assert 0 < cell < 0.1 and free.spend_usd == pytest.approx(2 * cell, abs=1e-5)
    cap = 1.0 + 1.5 * cell  # each cell alone stays under it; the two together do not
    capped = run("capped", cap)
    spent = [c.result.summary.spend_usd for c in capped.cells if c.result]
    stopped = [c.result.summary.stopped for c in capped.cells if c.result]
    assert f"spend reached the --max-cost cap ${cap:.2f}" in stopped
    # the set's spend stays within what the cap left for calls after the worst case
    assert sum(spent) == pytest.approx(capped.spend_usd, abs=1e-5)
    assert 1.2 * cell < sum(spent) <= 1.5 * cell + 0.01


def test_ctrl_c_stops_every_cell_and_removes_their_sandboxes(fake, tmp_path: Path) -> None:
    from podman import PodmanClient

    from skillbench.sandbox.podman.provider import LABEL, OWNER_LABEL

    skills = library(tmp_path, 1)
    sleepy = {"tool_calls": [{"bash": {"command": "sleep 60"}}]}
    fake({"conversations": [conversation("(?s)Create out", sleepy)]})
    out = tmp_path / "set"
    argv = [sys.executable, "-m", "skillbench", "eval", str(skills), "--model", MODEL]
    argv += ["--out", str(out), "--quiet", "--no-gen", "--execution-only", "--parallel", "4"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def mine() -> list[str]:
        with PodmanClient(base_url=os.environ["SKILLBENCH_PODMAN_URL"]) as client:
            owners = [
                c.labels.get(OWNER_LABEL, "")
                for c in client.containers.list(all=True, filters={"label": LABEL})
            ]
        return [o for o in owners if o.endswith(f":{proc.pid}")]

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and len(mine()) < 4:
        time.sleep(0.2)
    time.sleep(3.0)  # the four sleeps (two cells, two arms) are running in their sandboxes
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    assert f"Continue with: skillbench eval --resume {out}" in err
    assert mine() == []
    # neither cell finished: both are pending, each with its plan for `--resume` to go on
    assert [c.status for c in read_set(out).cells] == ["pending", "pending"]
    assert all((out / c.run / "plan.json").is_file() for c in read_set(out).cells)


def test_evaluate_set_in_a_running_event_loop(tmp_path: Path, monkeypatch) -> None:
    import asyncio

    monkeypatch.setenv("SKILLBENCH_SCRIPTS", str(scripts(tmp_path, 1)))
    skills = library(tmp_path, 1)

    def options(out: str) -> skillbench.Options:
        return skillbench.Options(
            model="scripted/good", generate=False, triggers=False, out=str(tmp_path / out)
        )

    async def both() -> tuple[skillbench.SetResult, skillbench.SetResult]:
        awaited = await skillbench.evaluate_set_async(
            [skills], options=options("a"), only=["greeter"]
        )
        # the plain function inside a loop runs on a thread of its own
        plain = skillbench.evaluate_set([skills / "shouter"], options=options("b"))
        return awaited, plain

    awaited, plain = asyncio.run(both())
    for result, skill in ((awaited, "greeter"), (plain, "shouter")):
        (cell,) = result.cells
        assert (cell.cell.skill, cell.cell.status) == (skill, "done")
        assert cell.result is not None and cell.result.summary.comparisons["baseline"].win == 1
