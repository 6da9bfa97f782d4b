"""Full agent sessions in real podman sandboxes, through each SDK against the fake server
(and through the scripted provider), asserting the transcript, the sandbox and the tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillbench.agents.builtin.loop import SessionResult, SkillInfo, run_agent, system_prompt
from skillbench.evals import load_case
from skillbench.models import resolve_model
from skillbench.results.transcript import TraceWriter, read_trace
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import StagedArm, stage_arm
from tests.helpers import make_skill

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]

FULL_SESSION = {
    "conversations": [
        {
            "steps": [
                {
                    "text": "I will write the script.",
                    "tool_calls": [
                        {"write_file": {"path": "hello.py", "content": "print('hello')\n"}}
                    ],
                },
                {
                    "tool_calls": [
                        {
                            "edit_file": {
                                "path": "hello.py",
                                "old_string": "hello",
                                "new_string": "hello, world",
                            }
                        }
                    ]
                },
                {"tool_calls": [{"bash": {"command": "python3 hello.py"}}]},
                {"text": "Let me check the skill.", "tool_calls": [{"skill": {"name": "greeter"}}]},
                {"text": "All done: hello.py prints hello, world."},
            ]
        }
    ]
}


@pytest.fixture
async def arm(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> AsyncIterator[StagedArm]:
    skill = make_skill(
        tmp_path,
        "greeter",
        {"evals/cases/c.yaml": "task: t\n", "scripts/greet.sh": "echo hi\n"},
        description="Greets people politely.",
    )
    case, _ = load_case(skill / "evals/cases/c.yaml", skill)
    staged = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    yield staged
    await staged.close()


SKILLS = [SkillInfo("greeter", "Greets people politely.")]


async def session(ref: str, arm: StagedArm, tmp_path: Path, **kw: Any) -> tuple[SessionResult, Any]:
    model = resolve_model(ref, max_retries=kw.pop("max_retries", 1), timeout=kw.pop("timeout", 5.0))
    trace = TraceWriter(tmp_path / "trace.jsonl")
    try:
        result = await run_agent(
            model,
            arm.sandbox,
            task="Write hello.py",
            skills=kw.pop("skills", SKILLS),
            trace=trace,
            max_turns=kw.pop("max_turns", 20),
            timeout_s=kw.pop("timeout_s", 60),
            case="c",
            arm="candidate",
            rep=1,
            **kw,
        )
    finally:
        trace.close()
        await model.aclose()
    return result, read_trace(tmp_path / "trace.jsonl")


@pytest.mark.parametrize("ref", ["anthropic/claude-sonnet-4-6", "openai/gpt-4.1"])
async def test_full_session_through_each_sdk(
    ref: str, arm: StagedArm, fake, tmp_path: Path
) -> None:
    server = fake(FULL_SESSION)
    result, transcript = await session(ref, arm, tmp_path)
    assert (result.stop_reason, result.turns, result.error) == ("end_turn", 5, None)
    assert await arm.sandbox.read_text("hello.py") == "print('hello, world')\n"

    types = [e["type"] for e in transcript.events]
    assert types == [
        "trace_start",
        "message",
        "message",
        "tool_call",
        "tool_result",
        "message",
        "tool_call",
        "tool_result",
        "message",
        "tool_call",
        "tool_result",
        "message",
        "tool_call",
        "tool_result",
        "message",
        "trace_end",
    ]
    start = transcript.events[0]
    assert (start["case"], start["arm"], start["rep"], start["model"]) == ("c", "candidate", 1, ref)
    assert "note" not in start  # only a stand-in for a model carries a note
    results = [e for e in transcript.events if e["type"] == "tool_result"]
    assert results[0]["text"] == "wrote 15 bytes to hello.py"
    assert results[1]["text"] == "edited hello.py"
    assert results[2]["text"] == "hello, world\n[exit code 0]" and results[2]["exit_code"] == 0
    assert results[3]["text"].startswith(
        "Skill folder: /skills/greeter\nFiles:\n./SKILL.md\n./scripts/greet.sh"
    )
    assert "Greets people politely." in results[3]["text"]
    assert not any(r["is_error"] for r in results)
    assert transcript.bash_commands == ["python3 hello.py"]
    assert "print('hello')" in transcript.all_text and "All done" in transcript.all_text

    # the system prompt lists the staged skill and the unattended note
    system = server.log()[0].body.get("system") or server.log()[0].body["messages"][0]["content"]
    text = system[0]["text"] if isinstance(system, list) else system
    assert text == system_prompt(SKILLS) and "No human is available" in text

    # token counts: the transcript's totals are what the server reported
    logged = server.log()
    assert len(logged) == 5
    end = transcript.end
    assert end is not None and end["turns"] == 5 and end["stop_reason"] == "end_turn"
    assert end["usage"]["input_tokens"] == sum(r.usage["input_tokens"] for r in logged)
    assert end["usage"]["output_tokens"] == sum(r.usage["output_tokens"] for r in logged)
    assert end["usage"]["cache_read_tokens"] == sum(
        r.usage.get("cache_read_input_tokens", 0) for r in logged
    )
    assert transcript.usage() == result.usage
    assert end["cost_usd"] == pytest.approx(result.cost_usd) and result.cost_usd > 0


async def test_scripted_provider_plays_the_same_session(
    arm: StagedArm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts/full.yaml").write_text(yaml.safe_dump(FULL_SESSION))
    monkeypatch.setenv("SKILLBENCH_SCRIPTS", str(tmp_path / "scripts"))
    result, transcript = await session("scripted/full", arm, tmp_path)
    assert (result.stop_reason, result.turns, result.cost_usd) == ("end_turn", 5, 0.0)
    assert await arm.sandbox.read_text("hello.py") == "print('hello, world')\n"
    start = transcript.events[0]
    assert start["model"] == "scripted/full"
    assert start["note"] == "scripted driver: replays a fixed script; this is not a model"


async def test_baseline_has_no_skill(arm: StagedArm, fake, tmp_path: Path) -> None:
    fake(
        {
            "conversations": [
                {"steps": [{"tool_calls": [{"skill": {"name": "greeter"}}]}, {"text": "ok"}]}
            ]
        }
    )
    _, transcript = await session("openai/gpt-4.1", arm, tmp_path, skills=[])
    result = next(e for e in transcript.events if e["type"] == "tool_result")
    assert result["is_error"] and result["text"] == "no such skill: 'greeter' (available: none)"


async def test_edit_errors_are_told_to_the_model(arm: StagedArm, fake, tmp_path: Path) -> None:
    fake(
        {
            "conversations": [
                {
                    "steps": [
                        {
                            "tool_calls": [
                                {"write_file": {"path": "a.txt", "content": "x x"}},
                                {
                                    "edit_file": {
                                        "path": "a.txt",
                                        "old_string": "x",
                                        "new_string": "y",
                                    }
                                },
                                {
                                    "edit_file": {
                                        "path": "a.txt",
                                        "old_string": "z",
                                        "new_string": "y",
                                    }
                                },
                                {"read_file": {"path": "missing.txt"}},
                                {"bash": {"command": "exit 3"}},
                            ]
                        },
                        {"text": "ok"},
                    ]
                }
            ]
        }
    )
    _, transcript = await session("anthropic/claude-sonnet-4-6", arm, tmp_path)
    texts = [(e["is_error"], e["text"]) for e in transcript.events if e["type"] == "tool_result"]
    assert texts == [
        (False, "wrote 3 bytes to a.txt"),
        (
            True,
            "old_string appears 2 times in a.txt; include more surrounding text so it is unique",
        ),
        (True, "old_string not found in a.txt"),
        (True, "read_file failed: No such file or directory: missing.txt"),
        (True, "[exit code 3]"),
    ]


async def test_model_that_never_stops_is_cut_at_max_turns(
    arm: StagedArm, fake, tmp_path: Path
) -> None:
    server = fake(
        {
            "conversations": [
                {"loop": True, "steps": [{"tool_calls": [{"bash": {"command": "echo again"}}]}]}
            ]
        }
    )
    result, transcript = await session("openai/gpt-4.1", arm, tmp_path, max_turns=4)
    assert (result.stop_reason, result.turns) == ("max_turns", 4)
    assert len(server.log()) == 4 and transcript.end["stop_reason"] == "max_turns"


async def test_wall_clock_cap_ends_the_session(arm: StagedArm, fake, tmp_path: Path) -> None:
    fake(
        {
            "latency": 0.3,
            "conversations": [
                {"loop": True, "steps": [{"tool_calls": [{"bash": {"command": "true"}}]}]}
            ],
        }
    )
    result, transcript = await session("anthropic/claude-sonnet-4-6", arm, tmp_path, timeout_s=1.0)
    assert result.stop_reason == "timeout" and 1 <= result.turns <= 4
    assert transcript.end["stop_reason"] == "timeout"


async def test_tool_that_never_returns_is_cut_and_the_model_told(
    arm: StagedArm, fake, tmp_path: Path
) -> None:
    fake(
        {
            "conversations": [
                {
                    "steps": [
                        {"tool_calls": [{"bash": {"command": "sleep 600", "timeout": 1}}]},
                        {"text": "gave up"},
                    ]
                }
            ]
        }
    )
    result, transcript = await session("openai/gpt-4.1", arm, tmp_path)
    assert result.stop_reason == "end_turn"
    told = next(e for e in transcript.events if e["type"] == "tool_result")
    assert told["is_error"] and told["text"] == "[timed out after 1 s; the command was killed]"


async def test_persistent_500_ends_as_infrastructure_error(
    arm: StagedArm, fake, tmp_path: Path
) -> None:
    fake(
        {
            "conversations": [
                {
                    "steps": [
                        {"tool_calls": [{"bash": {"command": "true"}}]},
                        {
                            "text": "x",
                            "faults": [{"status": 500, "times": 100, "retry_after": 0.01}],
                        },
                    ]
                }
            ]
        }
    )
    result, transcript = await session("anthropic/claude-sonnet-4-6", arm, tmp_path)
    assert result.stop_reason == "error" and result.errored and result.turns == 1
    assert "infrastructure" in (result.error or "") and "500" in (result.error or "")
    assert transcript.end["stop_reason"] == "error" and transcript.end["error"] == result.error


async def test_transcript_is_scrubbed_and_a_torn_line_is_tolerated(
    arm: StagedArm, fake, tmp_path: Path
) -> None:
    secret = "sk-ant-api03-SECRETSECRETSECRET1234"
    fake(
        {
            "conversations": [
                {
                    "steps": [
                        {"tool_calls": [{"bash": {"command": f"echo {secret}"}}]},
                        {"text": f"key {secret}"},
                    ]
                }
            ]
        }
    )
    await session("openai/gpt-4.1", arm, tmp_path)
    raw = (tmp_path / "trace.jsonl").read_text()
    assert secret not in raw and raw.count("[REDACTED]") == 3
    with (tmp_path / "trace.jsonl").open("a") as fh:
        fh.write('{"type": "message", "ro')
    assert read_trace(tmp_path / "trace.jsonl").end["stop_reason"] == "end_turn"


def test_long_tool_output_keeps_head_and_tail() -> None:
    from skillbench.agents.builtin.tools import cap_text

    text = "H" * 100 + "M" * 1000 + "T" * 100
    capped = cap_text(text, limit=200)
    assert capped == "H" * 100 + "\n[... 1000 characters cut ...]\n" + "T" * 100
    assert cap_text("short", limit=200) == "short"


async def test_a_full_context_ends_the_session_without_an_error(
    arm: StagedArm, fake, tmp_path: Path
) -> None:
    fake(
        {
            "conversations": [
                {
                    "steps": [
                        {
                            "tool_calls": [
                                {"write_file": {"path": "part.txt", "content": "partial"}}
                            ]
                        },
                        {
                            "text": "x",
                            "faults": [
                                {
                                    "status": 400,
                                    "message": "prompt is too long: 250000 tokens > 200000 maximum",
                                }
                            ],
                        },
                    ]
                }
            ]
        }
    )
    result, transcript = await session("anthropic/claude-sonnet-4-6", arm, tmp_path)
    assert (result.stop_reason, result.turns, result.errored) == ("context_exhausted", 1, False)
    assert transcript.end["stop_reason"] == "context_exhausted"
    assert await arm.sandbox.read_text("part.txt") == "partial"  # the work so far is scored


async def test_other_bad_requests_are_errors(arm: StagedArm, fake, tmp_path: Path) -> None:
    fake(
        {
            "conversations": [
                {
                    "steps": [
                        {
                            "text": "x",
                            "faults": [{"status": 400, "message": "tools.0: invalid schema"}],
                        }
                    ]
                }
            ]
        }
    )
    result, _ = await session("openai/gpt-4.1", arm, tmp_path)
    assert (
        result.stop_reason == "error"
        and result.errored
        and "invalid schema" in (result.error or "")
    )
