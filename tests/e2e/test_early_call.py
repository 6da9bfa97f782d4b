"""The builtin agent's opening model call flies while its sandbox is made and staged (design
§19): real podman sandboxes, the real SDK against the fake model server with latency. The
staging is timed (or made to fail) by wrapping the real stage_arm, nothing else."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from skillbench.engine import session as session_mod
from skillbench.engine.session import Sessions
from skillbench.models.base import Usage
from skillbench.models.pricing import cost_usd
from skillbench.sandbox.base import SandboxError
from tests.helpers import BASE, CAND, MODEL, conv, run_eval, skill, write_file

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

LATENCY = 0.6


def timed_staging(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """The (start, end) wall time of every stage_arm the engine runs."""
    windows: list[tuple[float, float]] = []
    real = session_mod.stage_arm

    async def stage(*args: Any, **kwargs: Any) -> Any:
        start = time.time()
        try:
            return await real(*args, **kwargs)
        finally:
            windows.append((start, time.time()))

    monkeypatch.setattr(session_mod, "stage_arm", stage)
    return windows


def events(run: Path, key: str) -> list[tuple[str, ...]]:
    """A transcript's events, each as its kind and (for messages, tools) role or name."""
    lines = (run / "transcripts" / f"{key}.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        e = json.loads(line)
        out.append((e["type"], e.get("role") or e.get("name") or ""))
    return out


def test_opening_call_flies_while_the_sandbox_stages(
    fake, tmp_path: Path, capsys, monkeypatch
) -> None:
    folder = skill(
        tmp_path,
        {"evals/cases/hello.yaml": "task: Create hello.txt\nchecks:\n  - file_exists: hello.txt\n"},
    )
    server = fake(
        {
            "latency": LATENCY,
            "conversations": [
                conv(CAND, "Create hello", write_file("hello.txt", "hello\n"), {"text": "done"}),
                conv(BASE, "Create hello", {"text": "I would need more information."}),
            ],
        }
    )
    windows = timed_staging(monkeypatch)
    _, _, summary = run_eval(capsys, folder, tmp_path / "run", "--parallel", "1")
    row = summary["rows"][0]
    assert (row["outcome"], row["decided_by"]) == ("win", "checks")
    assert row["arms"]["candidate"]["passed"] and not row["arms"]["baseline"]["passed"]
    # the transcripts hold the same events in the same order as when the call waited
    assert events(tmp_path / "run", "hello.candidate.1") == [
        ("trace_start", ""),
        ("message", "user"),
        ("message", "assistant"),
        ("tool_call", "write_file"),
        ("tool_result", "write_file"),
        ("message", "assistant"),
        ("trace_end", ""),
    ]
    assert events(tmp_path / "run", "hello.baseline.1") == [
        ("trace_start", ""),
        ("message", "user"),
        ("message", "assistant"),
        ("trace_end", ""),
    ]
    calls = server.log()
    assert len(calls) == 3  # two turns for the candidate, one for the baseline: none extra
    # each arm's opening call reached the model before its sandbox was staged
    assert len(windows) == 2
    assert all(any(start < c.at < end for c in calls) for start, end in windows), (
        windows,
        [c.at for c in calls],
    )
    journal = [json.loads(x) for x in (tmp_path / "run" / "journal.jsonl").read_text().splitlines()]
    seconds = [r["seconds"] for r in journal if r["type"] == "session"]
    assert all(s >= LATENCY for s in seconds)  # the session's clock runs from the call


def test_staging_failure_with_the_call_in_flight_counts_it_and_leaves_no_task(
    fake, tmp_path: Path, capsys, monkeypatch
) -> None:
    folder = skill(
        tmp_path,
        {"evals/cases/hello.yaml": "task: Create hello.txt\nchecks:\n  - file_exists: hello.txt\n"},
    )
    server = fake(
        {"latency": LATENCY, "conversations": [conv("(?s)", "Create hello", {"text": "done"})]}
    )
    real = session_mod.stage_arm

    async def stage(provider: Any, box: Any, spec: Any, skills: Any, **kwargs: Any) -> Any:
        if skills:  # the candidate's sandbox: podman fails while the call is in flight
            await asyncio.sleep(LATENCY / 4)
            raise SandboxError("injected: the podman service went away")
        return await real(provider, box, spec, skills, **kwargs)

    monkeypatch.setattr(session_mod, "stage_arm", stage)
    left: list[str] = []
    attempt = Sessions.attempt

    async def watched(self: Sessions, *args: Any, **kwargs: Any) -> Any:
        record = await attempt(self, *args, **kwargs)
        left.extend(
            repr(t)
            for t in asyncio.all_tasks()
            if "ask" in t.get_coro().__qualname__  # type: ignore[union-attr]
        )
        return record

    monkeypatch.setattr(Sessions, "attempt", watched)
    _, _, summary = run_eval(capsys, folder, tmp_path / "run", "--parallel", "1")
    assert left == []  # no opening call outlives its session
    journal = [json.loads(x) for x in (tmp_path / "run" / "journal.jsonl").read_text().splitlines()]
    cand = next(r for r in journal if r["type"] == "session" and r["arm"] == "candidate")
    base = next(r for r in journal if r["type"] == "session" and r["arm"] == "baseline")
    assert cand["outcome"] == "error" and "injected" in cand["error"]
    sent = [c for c in server.log() if "greeter" in json.dumps(c.body["system"])]
    assert len(sent) == 2  # the opening call of each of the two attempts, nothing after
    # both were read to the end and billed: the record and the run's spend hold them
    assert cand["usage"]["input_tokens"] == sum(c.usage["input_tokens"] for c in sent)
    usage = Usage(**{k: v for k, v in cand["usage"].items() if k in Usage.__struct_fields__})
    assert cand["cost_usd"] > 0 and cand["cost_usd"] == pytest.approx(cost_usd(MODEL, usage))
    assert summary["spend_usd"] == pytest.approx(cand["cost_usd"] + base["cost_usd"], abs=1e-6)


def test_a_setup_case_calls_the_model_only_after_its_setup(
    fake, tmp_path: Path, capsys, monkeypatch
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/prep.yaml": "task: Read the notes\nsetup: sleep 0.3; echo hi > notes\nchecks:\n  - file_exists: notes\n",
            "evals/cases/broken.yaml": "task: Fix the broken thing\nsetup: exit 3\nchecks:\n  - file_exists: x\n",
        },
    )
    server = fake({"latency": LATENCY, "conversations": [conv("(?s)", "notes", {"text": "ok"})]})
    windows = timed_staging(monkeypatch)
    _, _, summary = run_eval(capsys, folder, tmp_path / "run", "--parallel", "1")
    assert [s["case"] for s in summary["skipped"]] == ["broken"]
    calls = server.log()
    assert not any("broken" in json.dumps(c.body["messages"]) for c in calls)  # none spent
    assert len(calls) == 2  # prep's two arms, each after its setup ended
    assert len(windows) == 3
    assert not any(start < c.at < end for c in calls for start, end in windows)
