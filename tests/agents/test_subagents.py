"""Subagents and model aliases (docs/agents.md): a skill that delegates to a subagent must be
measured on the run's model, not broken by a refused call. Claude Code's `Agent` tool names a
model by alias (`sonnet`, `opus`, `haiku`, `fable`), and each alias is Anthropic's current model
of that family unless pointed elsewhere; the broker allows only the run's models. The scripted
model plays the main agent starting subagents with each alias, the real Claude Code runs them in
a real sandbox, and every call must reach the provider naming the run's model and be counted in
the session's record. A model that is neither the run's nor an alias pointed at it stays
refused, and is not counted as a call the session made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from skillbench.broker.server import Broker
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.script import parse_script
from skillbench.report.terminal import models_line
from skillbench.results.summary import Efficiency
from tests.agents.test_agents import greeter, transcript
from tests.helpers import conv, run_eval
from tests.security.test_broker_attacks import post_as_relay

ALIASES = ("sonnet", "opus", "haiku", "fable")
RUN_MODEL = "claude-sonnet-4-6"


def _delegate(alias: str) -> dict[str, Any]:
    return {
        "Agent": {
            "description": f"greet via {alias}",
            "prompt": f"SUBTASK-{alias}: say hello",
            "subagent_type": "general-purpose",
            "model": alias,
            "run_in_background": False,
        }
    }


def _script() -> dict[str, Any]:
    subagents = [
        {"when": f"SUBTASK-{alias}", "steps": [{"text": f"hello from the {alias} subagent"}]}
        for alias in ALIASES
    ]
    main = conv(
        "(?s)",
        "Create hello.txt",
        {"tool_calls": [_delegate(alias) for alias in ALIASES]},
        {"tool_calls": [{"Bash": {"command": "echo delegated > hello.txt"}}]},
        {"text": "I greeted everyone."},
    )
    return {"conversations": [*subagents, main]}


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_claude_codes_subagents_by_alias_run_on_the_runs_model_and_are_counted(
    fake, tmp_path: Path, capsys
) -> None:
    folder = greeter(tmp_path, "claude-code")
    server = fake(_script())
    code, lines, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", f"anthropic/{RUN_MODEL}"
    )
    assert code == 3, lines  # one unit: INCONCLUSIVE (nothing failed)
    asked = [r for r in server.log("anthropic") if r.source]  # the turns the script played
    by_prompt = {
        alias: [r for r in asked if f"SUBTASK-{alias}" in json.dumps(r.body["messages"][:1])]
        for alias in ALIASES
    }
    for alias, calls in by_prompt.items():  # every alias's subagent ran, on the run's model
        assert calls and {(r.body["model"], r.status) for r in calls} == {(RUN_MODEL, 200)}, alias
    assert {r.body["model"] for r in server.log("anthropic")} == {RUN_MODEL}
    for key in ("hello.baseline.1", "hello.candidate.1"):
        events = transcript(tmp_path / "run", key)
        results = [e["text"] for e in events if e["type"] == "tool_result"]
        assert sum("hello from the" in text for text in results) == len(ALIASES), results
        end = events[-1]
        assert end["type"] == "trace_end" and end["stop_reason"] == "end_turn"
        log = (tmp_path / f"run/exchanges/{key}.jsonl").read_text().splitlines()
        exchanges = [json.loads(x) for x in log]
        assert {(x["model"], x["status"]) for x in exchanges} == {(RUN_MODEL, 200)}
        assert end["models"] == {RUN_MODEL: len(exchanges)}  # every call, counted by its model
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    sessions = [j for j in journal if j["type"] == "session"]
    assert {s["outcome"] for s in sessions} <= {"pass", "fail"}
    assert all(set(s["models"]) == {RUN_MODEL} and s["models"][RUN_MODEL] >= 7 for s in sessions)
    assert set(summary["efficiency"]["candidate"]["models"]) == {RUN_MODEL}
    shown = [line for line in lines if line.startswith("model calls: ")]  # the report says so
    assert len(shown) == 1 and f"candidate {RUN_MODEL} x" in shown[0], lines


GEMINI_MODEL = "gemini-2.5-pro"


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_gemini_clis_subagent_with_a_flash_model_of_its_own_runs_on_the_runs_model(
    fake, tmp_path: Path, capsys
) -> None:
    # Gemini CLI 0.61.0's `cli_help` subagent names a Flash model of its own
    subagent = {
        "when": "SUBTASK-gemini",
        "steps": [
            {
                "tool_calls": [
                    {
                        "complete_task": {
                            "report": {"answer": "hello from the cli_help subagent", "sources": []}
                        }
                    }
                ]
            },
            {"text": "reported"},
        ],
    }
    main = conv(
        "(?s)",
        "Create hello.txt",
        {
            "tool_calls": [
                {"invoke_agent": {"agent_name": "cli_help", "prompt": "SUBTASK-gemini: hello?"}}
            ]
        },
        {"tool_calls": [{"run_shell_command": {"command": "echo delegated > hello.txt"}}]},
        {"text": "I greeted everyone."},
    )
    folder = greeter(tmp_path, "gemini-cli")
    server = fake({"conversations": [subagent, main]})
    code, lines, _ = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", f"google/{GEMINI_MODEL}"
    )
    assert code == 3, lines
    played = [r for r in server.log("gemini") if r.source]
    asked = {r.path.split("/models/")[1].split(":")[0] for r in server.log("gemini")}
    assert asked == {GEMINI_MODEL}  # every call, the subagent's too, named the run's model
    sub = [r for r in played if "SUBTASK-gemini" in json.dumps(r.body.get("contents", [])[:1])]
    # the subagent's own calls (its system prompt is cli_help's), answered, one per session
    assert len(sub) == 2 and {r.status for r in sub} == {200}
    assert all("CLI Help Agent" in json.dumps(r.body.get("systemInstruction")) for r in sub)
    for key in ("hello.baseline.1", "hello.candidate.1"):
        events = transcript(tmp_path / "run", key)
        called = [e for e in events if e["type"] == "tool_call"]
        assert [c["name"] for c in called] == ["invoke_agent", "bash"]
        log = (tmp_path / f"run/exchanges/{key}.jsonl").read_text().splitlines()
        exchanges = [json.loads(x) for x in log]
        assert {(x["model"], x["status"]) for x in exchanges} == {(GEMINI_MODEL, 200)}
        assert events[-1]["models"] == {GEMINI_MODEL: len(exchanges)}


def test_a_model_no_alias_points_at_stays_refused_and_uncounted(tmp_path: Path) -> None:
    fake = FakeModelServer(parse_script({"rules": [{"when": "hi", "replies": ["ok"]}]})).start()
    broker = Broker(
        upstream=fake.url,
        api_key="k",
        model=f"anthropic/{RUN_MODEL}",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    try:
        sent = {}
        for model in (RUN_MODEL, "claude-sonnet-5-5", RUN_MODEL, "claude-haiku-4-5"):
            body = {
                "model": model,
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "hi"}],
            }
            reply: httpx.Response = post_as_relay(
                broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"}
            )
            sent.setdefault(model, set()).add(reply.status_code)
    finally:
        broker.stop()
        fake.stop()
    assert sent == {RUN_MODEL: {200}, "claude-sonnet-5-5": {400}, "claude-haiku-4-5": {400}}
    assert broker.model_calls == {RUN_MODEL: 2}  # what the session's record shows
    assert [r.body["model"] for r in fake.log()] == [RUN_MODEL, RUN_MODEL]


def test_the_report_shows_the_models_an_agent_clis_calls_named() -> None:
    cli = Efficiency(1.0, 1.0, 0.1, 10.0, 5.0, models={"claude-haiku-4-5": 2, RUN_MODEL: 7})
    assert models_line({"candidate": cli, "baseline": Efficiency(1.0, 1.0, 0.1, 10.0, 5.0)}) == (
        f"model calls: candidate claude-haiku-4-5 x2, {RUN_MODEL} x7"
    )
    assert models_line({"baseline": Efficiency(1.0, 1.0, 0.1, 10.0, 5.0)}) is None  # builtin
