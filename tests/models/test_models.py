"""The model layer through the real SDKs against the fake server: wire formats, token
accounting, and each fault becoming the right error after the SDK's own retries."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from skillbench.models import ModelRefError, resolve_model
from skillbench.models.base import (
    Message,
    ModelError,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from skillbench.models.fake_wire import anthropic_shape
from skillbench.models.pricing import BUILTIN, Price, cost_usd, price_for
from skillbench.models.script import Player, parse_script

REFS = ["anthropic/claude-sonnet-4-6", "openai/gpt-4.1", "google/gemini-2.5-flash"]
TOOL = ToolSpec("bash", "run", {"type": "object", "properties": {"command": {"type": "string"}}})


def user(text: str) -> list[Message]:
    return [Message("user", (TextBlock(text),))]


async def ask(ref: str, text: str = "hello", **settings: Any):
    model = resolve_model(ref, **{"max_retries": 2, "timeout": 5.0, **settings})
    try:
        return await model.complete(
            system="be brief", messages=user(text), tools=[TOOL], max_tokens=64
        )
    finally:
        await model.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("ref", REFS)
async def test_text_and_tool_calls_round_trip(ref: str, fake) -> None:
    server = fake(
        {
            "conversations": [
                {
                    "steps": [
                        {"text": "running", "tool_calls": [{"bash": {"command": "ls -la"}}]},
                        {"text": "done"},
                    ]
                }
            ]
        }
    )
    first = await ask(ref)
    assert first.text == "running" and first.stop_reason == "tool_use"
    (call,) = first.tool_calls
    assert (call.name, call.arguments) == ("bash", {"command": "ls -la"})
    model = resolve_model(ref, max_retries=0, timeout=5.0)
    history = [
        *user("hello"),
        Message("assistant", first.content),
        Message("user", (ToolResult(call.id, "bash", "file.txt", False),)),
    ]
    second = await model.complete(system="be brief", messages=history, tools=[TOOL], max_tokens=64)
    await model.aclose()
    assert second.text == "done" and second.stop_reason == "end_turn"
    log = server.log()
    assert len(log) == 2
    # the tool result travelled in the provider's own wire format
    if ref.startswith("anthropic"):
        last = log[1].body["messages"][-1]["content"][0]
        assert (last["type"], last["tool_use_id"], last["content"]) == (
            "tool_result",
            call.id,
            "file.txt",
        )
        assert log[0].body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert log[0].body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    elif ref.startswith("google"):
        assert log[0].path == "/v1beta/models/gemini-2.5-flash:generateContent"
        last = log[1].body["contents"][-1]
        assert (last["role"], last["parts"][0]["functionResponse"]) == (
            "user",
            {"name": "bash", "response": {"output": "file.txt"}},
        )
        assert log[0].body["systemInstruction"]["parts"] == [{"text": "be brief"}]
        assert log[0].body["generationConfig"]["maxOutputTokens"] == 64
        assert {r.api_key for r in log} == {"fake-server-gemini-key"}
    else:
        last = log[1].body["messages"][-1]
        assert (last["role"], last["tool_call_id"], last["content"]) == (
            "tool",
            call.id,
            "file.txt",
        )
        assert log[0].body["messages"][0] == {"role": "system", "content": "be brief"}
    # token counts are what the server reported
    for completion, entry in zip((first, second), log, strict=True):
        assert completion.usage.input_tokens == entry.usage["input_tokens"]
        assert completion.usage.output_tokens == entry.usage["output_tokens"]
        assert completion.usage.cache_read_tokens == entry.usage.get("cache_read_input_tokens", 0)
        assert completion.usage.cache_write_tokens == entry.usage.get(
            "cache_creation_input_tokens", 0
        )
    # "be brief" is far below any provider's shortest cacheable prefix: nothing is cached
    # (tests/engine/test_caching.py has the prompts that are)
    assert second.usage.cache_read_tokens == second.usage.cache_write_tokens == 0


@pytest.mark.anyio
@pytest.mark.parametrize("ref", REFS)
async def test_rate_limit_then_success_is_retried(ref: str, fake) -> None:
    server = fake(
        {
            "conversations": [
                {"steps": [{"text": "ok", "faults": [{"status": 429, "retry_after": 0.05}]}]}
            ]
        }
    )
    assert (await ask(ref)).text == "ok"
    assert [r.status for r in server.log()] == [429, 200]


@pytest.mark.anyio
@pytest.mark.parametrize("ref", REFS)
async def test_persistent_500_is_an_infrastructure_error(ref: str, fake) -> None:
    server = fake(
        {
            "conversations": [
                {
                    "steps": [
                        {
                            "text": "never",
                            "faults": [{"status": 500, "times": 100, "retry_after": 0.01}],
                        }
                    ]
                }
            ]
        }
    )
    with pytest.raises(ModelError) as info:
        await ask(ref, max_retries=2)
    assert info.value.kind == "infrastructure" and "500" in str(info.value)
    assert [r.status for r in server.log()] == [500, 500, 500]  # one try and two SDK retries


@pytest.mark.anyio
@pytest.mark.parametrize("ref", REFS)
async def test_stalled_response_times_out(ref: str, fake) -> None:
    server = fake(
        {"conversations": [{"steps": [{"text": "late", "faults": [{"stall": 2.0, "times": 10}]}]}]}
    )
    with pytest.raises(ModelError) as info:
        await ask(ref, timeout=0.3, max_retries=1)
    assert info.value.kind == "infrastructure" and "Timeout" in str(info.value)
    # the retry was sent; the server logs a request once it has read it, which on a loaded
    # machine can come after the client has already given up on it
    for _ in range(50):
        if len(server.log()) >= 2:
            break
        await anyio.sleep(0.1)
    assert len(server.log()) == 2  # one try and one SDK retry, no more


@pytest.mark.anyio
@pytest.mark.parametrize("ref", REFS)
async def test_malformed_body_is_an_infrastructure_error(ref: str, fake) -> None:
    fake({"conversations": [{"steps": [{"text": "x", "faults": [{"malformed": True}]}]}]})
    with pytest.raises(ModelError) as info:
        await ask(ref)
    assert info.value.kind == "infrastructure" and "malformed" in str(info.value)


@pytest.mark.anyio
@pytest.mark.parametrize("ref", REFS)
async def test_auth_errors_are_reported_as_such(ref: str, fake) -> None:
    server = fake({"conversations": [{"steps": [{"text": "x", "faults": [{"status": 401}]}]}]})
    with pytest.raises(ModelError) as info:
        await ask(ref)
    assert info.value.kind == "auth"
    assert len(server.log()) == 1  # not retried


@pytest.mark.anyio
async def test_anthropic_refusal_is_a_stop_reason(fake) -> None:
    fake({"conversations": [{"steps": [{"text": "I can't help", "stop_reason": "refusal"}]}]})
    assert (await ask(REFS[0])).stop_reason == "refusal"


def test_unknown_provider_is_refused() -> None:
    with pytest.raises(
        ModelRefError, match="must be anthropic/<model>, openai/<model>, google/<model> or scripted"
    ):
        resolve_model("claude/pro")


def test_cost_from_price_table_and_user_prices() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=1_000_000)
    assert cost_usd("anthropic/claude-sonnet-4-6", usage) == pytest.approx(3.0 + 1.5 + 0.3)
    assert cost_usd("openai/my-local-llama", usage) is None
    extra = {"openai/my-local-llama": Price(input=1.0, output=2.0)}
    assert cost_usd("openai/my-local-llama", usage, extra) == pytest.approx(1.0 + 0.2 + 0.1)
    assert cost_usd("scripted/demo", usage) == 0.0


def test_tool_call_ids_survive_in_assistant_content() -> None:
    msg = Message("assistant", (TextBlock("a"), ToolCall("id1", "bash", {"command": "x"})))
    assert msg.text == "a" and [c.id for c in msg.tool_calls] == ["id1"]


def test_unknown_model_versions_have_no_guessed_price() -> None:
    usage = Usage(input_tokens=1_000_000)
    assert cost_usd("anthropic/claude-opus-4-5-20251101", usage) == pytest.approx(5.0)
    assert cost_usd("anthropic/claude-opus-4-1", usage) == pytest.approx(15.0)
    assert cost_usd("anthropic/claude-opus-4-7", usage) is None  # unknown: n/a, not a guess


@pytest.mark.parametrize(
    "ref",
    [
        "openai/gpt-5-pro",  # $15 / $120: 12x gpt-5, which its name starts with
        "openai/gpt-5.2",
        "openai/gpt-4o-audio-preview",  # audio is billed above the text rate
        "google/gemini-2.5-flash-image",  # image output at $30 per Mtok
        "anthropic/claude-sonnet-4-6-thinking-max",
    ],
)
def test_a_longer_name_is_a_model_of_its_own_not_priced_as_its_prefix(ref: str) -> None:
    # counted at the shorter name's rate, --max-cost would let it spend many times the cap
    assert price_for(ref) is None


@pytest.mark.parametrize(
    ("ref", "base"),
    [
        ("anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5"),
        ("anthropic/claude-opus-4-20250514", "anthropic/claude-opus-4"),
        ("anthropic/claude-3-5-haiku-latest", "anthropic/claude-3-5-haiku"),
        ("openai/gpt-4.1-2025-04-14", "openai/gpt-4.1"),
        ("openai/gpt-4o-mini-2024-07-18", "openai/gpt-4o-mini"),
        ("scripted/anything", "scripted/"),
    ],
)
def test_a_dated_snapshot_is_priced_as_its_model(ref: str, base: str) -> None:
    assert price_for(ref) == BUILTIN[base]


def test_a_snapshot_priced_apart_keeps_its_own_price() -> None:
    # gpt-4o's first snapshot: $5 / $15 and no cache discount, not gpt-4o's $2.50 / $10
    first = price_for("openai/gpt-4o-2024-05-13")
    assert first is not None and (first.input, first.output) == (5.0, 15.0)
    usage = Usage(input_tokens=1_000_000, cache_read_tokens=1_000_000)
    assert cost_usd("openai/gpt-4o-2024-05-13", usage) == pytest.approx(10.0)
    # the long-context tier follows the same names: Sonnet 4's snapshot, not Sonnet 4.6
    big = Usage(input_tokens=300_000)
    assert cost_usd("anthropic/claude-sonnet-4-20250514", big) == pytest.approx(0.3 * 6.0)
    assert cost_usd("anthropic/claude-sonnet-4-6", big) == pytest.approx(0.3 * 3.0)


def test_a_system_message_after_the_first_user_turn_is_part_of_the_system_prompt() -> None:
    # Claude Code, for a model name it does not know (scripted/demo is "demo"), sends its
    # skills listing as a system-role message after the user's: the script must see it there
    body = {
        "system": [{"type": "text", "text": "cc_entrypoint=sdk-cli; You are Claude Code"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "review stats.py"}]},
            {"role": "system", "content": [{"type": "text", "text": "- diff-review: Review"}]},
        ],
    }
    system, first, last, turns = anthropic_shape(body)
    assert "- diff-review: Review" in system and "cc_entrypoint" in system
    assert (first, last, turns) == ("review stats.py", "review stats.py", 0)
    script = parse_script(
        {
            "conversations": [
                {"when": "(?s)cc_entrypoint=.*- diff-review: .*stats", "steps": [{"text": "c"}]},
                {"when": "(?s)cc_entrypoint=", "steps": [{"text": "b"}]},
            ]
        }
    )
    assert Player(script).play(system, first, last, turns).source == "conversation 0"


def test_a_client_that_resets_its_connection_prints_no_traceback(capfd) -> None:
    # the server runs inside skillbench for scripted CLI arms: a run stopped with a call in
    # flight resets the connection, and socketserver printed a traceback into skillbench's
    # stderr (seen in the full-disk test, whose only allowed stderr line is the error)
    import socket
    import struct
    import time

    from skillbench.models.fake_server import FakeModelServer

    with FakeModelServer(parse_script({"rules": [{"when": "x", "replies": ["ok"]}]})) as server:
        host, port = server.url.removeprefix("http://").split("/")[0].split(":")
        for _ in range(5):
            sock = socket.create_connection((host, int(port)))
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n")  # a head cut short
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # RST, not FIN
        time.sleep(0.5)  # (its threads read and fail)
    assert "Traceback" not in capfd.readouterr().err
