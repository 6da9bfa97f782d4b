"""Prompt caching through the real SDKs to the fake server over HTTP: the model layer sends
its stable prefix in the form each provider caches, the fake server reads only a prefix an
earlier request wrote (the providers' own rules), and the ledger and the broker bill cache
writes and reads at their prices."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from skillbench.broker.server import Broker
from skillbench.engine.triggers import TriggerCaller
from skillbench.evals.skills import Skill
from skillbench.models import resolve_model
from skillbench.models.anthropic_api import AnthropicModel
from skillbench.models.base import (
    Message,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    anthropic_usage,
)
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.ledger import MeteredModel, RunLedger
from skillbench.models.pricing import cost_usd, price_for, worst_case_usd
from skillbench.models.script import parse_script
from tests.security.test_broker_attacks import post_as_relay

SONNET = "anthropic/claude-sonnet-4-6"
LONG = "Follow the house rules. " * 400  # ~2400 fake tokens: past the 1024-token minimum
TOOL = ToolSpec("bash", "run a command", {"type": "object", "properties": {}})
LOOP = {"conversations": [{"loop": True, "steps": [{"text": "go", "tool_calls": [{"bash": {}}]}]}]}


async def _conversation(model: Any, turns: int, system: str = LONG) -> list[Usage]:
    """`turns` calls of a tool loop as the builtin loop makes them (each user turn marked)."""
    messages = [Message("user", (TextBlock("start the task", cache=True),))]
    usages = []
    for _ in range(turns):
        done = await model.complete(system=system, messages=messages, tools=[TOOL], max_tokens=64)
        usages.append(done.usage)
        (call,) = done.tool_calls
        messages += [
            Message("assistant", done.content),
            Message("user", (ToolResult(call.id, call.name, "output " * 50, cache=True),)),
        ]
    return usages


def _marks(body: dict[str, Any]) -> int:
    blocks = [*(body.get("tools") or []), *(body.get("system") or [])]
    blocks += [b for m in body["messages"] for b in m["content"] if isinstance(b, dict)]
    return sum("cache_control" in b for b in blocks)


@pytest.mark.anyio
async def test_a_tool_loop_writes_once_then_reads_the_conversation_so_far(fake) -> None:
    server = fake(LOOP)
    model = resolve_model(SONNET, max_retries=0)
    usages = await _conversation(model, 4)
    await model.aclose()
    first, *rest = usages
    assert first.cache_read_tokens == 0 and first.cache_write_tokens > 2000
    written = first.cache_write_tokens
    for usage in rest:  # each turn reads all that was written before, writes only its news
        assert usage.cache_read_tokens == written
        assert 0 < usage.cache_write_tokens < 200
        written += usage.cache_write_tokens
        # plain input is what follows the last breakpoint (and the body's own framing)
        assert usage.input_tokens < 0.05 * usage.cache_read_tokens
    assert all(_marks(r.body) <= 4 for r in server.log())
    # prompt tokens add up: read + written + plain input == the whole prompt
    last = server.log()[-1].usage
    whole = last["input_tokens"] + last["cache_read_input_tokens"]
    assert whole + last["cache_creation_input_tokens"] >= written


@pytest.mark.anyio
async def test_a_prompt_never_seen_reads_nothing(fake) -> None:
    """No read without an earlier write of the same prefix: a changed system prompt, a prompt
    below the minimum, and a request without breakpoints each read nothing."""
    fake(LOOP)
    model = resolve_model(SONNET, max_retries=0)
    (a,) = await _conversation(model, 1)
    (b,) = await _conversation(model, 1, system=LONG + "and one more rule.")
    assert b.cache_read_tokens == 0 and b.cache_write_tokens > 0  # its own prefix, new
    short = await _conversation(model, 3, system="be brief")
    assert all(u.cache_read_tokens == u.cache_write_tokens == 0 for u in short)
    await model.aclose()
    plain = AnthropicModel(SONNET, max_retries=0, caching=False)
    again = await _conversation(plain, 2)
    await plain.aclose()
    assert all(u.cache_read_tokens == u.cache_write_tokens == 0 for u in again)
    assert a.cache_write_tokens > 0


@pytest.mark.anyio
async def test_each_model_caches_only_from_its_own_minimum(fake) -> None:
    """The same ~1,500-token prefix caches on Sonnet 4.5 (1,024 minimum), not on Sonnet 4.6
    (2,048 in practice) nor Opus 4.6 (4,096); ~4,800 tokens cache on all three."""
    fake(LOOP)
    mid, long = "Follow the house rules. " * 250, LONG * 2
    written = {}
    for name in ("claude-sonnet-4-5", "claude-sonnet-4-6", "claude-opus-4-6"):
        model = resolve_model(f"anthropic/{name}", max_retries=0)
        (short,) = await _conversation(model, 1, system=name + mid)
        (whole,) = await _conversation(model, 1, system=name + long)
        await model.aclose()
        written[name] = (short.cache_write_tokens, whole.cache_write_tokens)
    assert written["claude-sonnet-4-5"][0] > 1024
    assert written["claude-sonnet-4-6"][0] == written["claude-opus-4-6"][0] == 0
    assert all(w > 4096 for _, w in written.values())


@pytest.mark.anyio
async def test_at_most_four_breakpoints_are_sent_newest_first(fake) -> None:
    server = fake({"conversations": [{"loop": True, "steps": [{"text": "ok"}]}]})
    model = resolve_model(SONNET, max_retries=0)
    history = []
    for i in range(6):  # six marked turns: only the newest two fit beside tools and system
        history += [
            Message("user", (TextBlock(f"turn {i} " + "x" * 40, cache=True),)),
            Message("assistant", (ToolCall(f"t{i}", "bash", {}),)),
        ]
    history.append(
        Message("user", (ToolResult("t5", "bash", "done", cache=True), TextBlock("", cache=True)))
    )
    await model.complete(system=LONG, messages=history[1:], tools=[TOOL], max_tokens=16)
    await model.aclose()
    body = server.log()[0].body
    assert _marks(body) == 4
    assert "cache_control" in body["tools"][-1] and "cache_control" in body["system"][0]
    marked = [m["content"][-1] for m in body["messages"] if "cache_control" in m["content"][-1]]
    assert [b.get("text", b.get("content")) for b in marked] == ["turn 5 " + "x" * 40, "done"]
    assert all("cache" not in b for m in body["messages"] for b in m["content"])


def test_the_fake_refuses_a_fifth_breakpoint_as_the_api_does(fake) -> None:
    fake({"rules": [{"when": ".", "replies": ["ok"]}]})
    client = anthropic.Anthropic(max_retries=0)
    mark = {"type": "ephemeral"}
    blocks = [{"type": "text", "text": f"b{i}", "cache_control": mark} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks"):
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=8,
            messages=[{"role": "user", "content": blocks}],  # type: ignore[misc]
        )


def test_the_fake_bills_and_caches_the_tool_prompt_anthropic_adds(fake) -> None:
    fake({"rules": [{"when": ".", "replies": ["ok"]}]})
    client = anthropic.Anthropic(max_retries=0)
    tool = {"name": "bash", "input_schema": {"type": "object"}}
    ask: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 8}
    ask["messages"] = [{"role": "user", "content": "hi"}]

    def used(**kw: Any) -> Any:
        return client.messages.create(**{**ask, **kw}).usage

    bare, auto = used(), used(tools=[tool])
    forced = used(tools=[tool], tool_choice={"type": "any"})
    tool_bytes = len(json.dumps(tool, sort_keys=True, separators=(",", ":"))) // 4
    assert auto.input_tokens - bare.input_tokens == 346 + tool_bytes
    assert forced.input_tokens - bare.input_tokens == 313 + tool_bytes
    # it sits in the cached prefix, with the tools: a read leaves almost nothing uncached
    cached = {**tool, "cache_control": {"type": "ephemeral"}}
    system = [{"type": "text", "text": LONG[:3000], "cache_control": {"type": "ephemeral"}}]
    first, second = used(tools=[cached], system=system), used(tools=[cached], system=system)
    assert first.cache_creation_input_tokens == second.cache_read_input_tokens > 1024
    assert second.input_tokens == first.input_tokens < 50  # the message alone


@pytest.mark.anyio
async def test_openai_reads_a_prefix_seen_before_in_128_token_steps(fake) -> None:
    fake(LOOP)
    model = resolve_model("openai/gpt-4.1", max_retries=0)
    usages = await _conversation(model, 3)
    short = await _conversation(model, 2, system="be brief")
    await model.aclose()
    assert usages[0].cache_read_tokens == 0
    for usage in usages[1:]:
        assert usage.cache_read_tokens >= 1024 and usage.cache_read_tokens % 128 == 0
        assert usage.cache_write_tokens == 0  # OpenAI writes automatically, at no charge
    assert all(u.cache_read_tokens == 0 for u in short)  # under 1024 tokens: never cached


def test_the_responses_api_reports_cached_input_tokens(fake) -> None:
    fake({"rules": [{"when": "hello", "replies": ["hi"]}]})
    client = openai.OpenAI(max_retries=0)

    def ask() -> Any:
        stream = client.responses.create(
            model="gpt-5",
            instructions=LONG,
            input=[{"role": "user", "content": "hello"}],
            stream=True,
        )
        return next(e.response.usage for e in stream if e.type == "response.completed")

    first, second = ask(), ask()
    assert first.input_tokens_details.cached_tokens == 0
    cached = second.input_tokens_details.cached_tokens
    assert cached >= 1024 and cached % 128 == 0 and cached <= second.input_tokens


def test_cache_tokens_are_billed_at_their_prices() -> None:
    price = price_for(SONNET)
    assert price is not None and price.input == 3.0
    one = {"input": 1.0, "read": 0.1, "write": 1.25, "hour": 2.0}
    for field, key in [
        ("input_tokens", "input"),
        ("cache_read_tokens", "read"),
        ("cache_write_tokens", "write"),
        ("cache_write_1h_tokens", "hour"),
    ]:
        usage = Usage(**{field: 1_000_000})
        assert cost_usd(SONNET, usage) == pytest.approx(3.0 * one[key])
        # the reservation covers any way the same tokens could be billed
        worst = worst_case_usd(SONNET, 1_000_000, 0)
        assert worst is not None and worst >= cost_usd(SONNET, usage)
    gpt5 = cost_usd("openai/gpt-5", Usage(cache_read_tokens=1_000_000))
    assert gpt5 == pytest.approx(0.125)  # OpenAI's cached input: a tenth for GPT-5


@pytest.mark.anyio
async def test_the_ledger_settles_a_cached_call_at_its_billed_price(fake) -> None:
    fake(LOOP)
    run = RunLedger(None)
    model = MeteredModel(resolve_model(SONNET, max_retries=0), run, {}, "agent")
    usages = await _conversation(model, 3)
    await model.aclose()
    billed = sum(cost_usd(SONNET, u) or 0.0 for u in usages)
    assert run.snapshot().spent == pytest.approx(billed)
    uncached = sum(
        cost_usd(
            SONNET,
            Usage(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens, u.output_tokens),
        )
        or 0.0
        for u in usages
    )
    assert billed < 0.6 * uncached


@pytest.mark.anyio
async def test_catalog_calls_cache_the_library_catalog(fake) -> None:
    server = fake(
        {"rules": [{"when": "User request", "replies": ['{"nonce": "$FRAME_ID", "selected": []}']}]}
    )
    caller = TriggerCaller(resolve_model(SONNET, max_retries=0), parallel=1)
    library = [
        Skill(f"s{i}", f"Skill {i}: " + "does things " * 80, f"/x/{i}", 1) for i in range(12)
    ]
    calls = [await caller.call(library, f"request {n}", 0) for n in range(3)]
    await caller.model.aclose()
    assert [c.selected for c in calls] == [(), (), ()]
    usages = [r.usage for r in server.log()]
    assert usages[0]["cache_creation_input_tokens"] > 2048  # Sonnet 4.6's minimum
    assert all(
        u["cache_read_input_tokens"] == usages[0]["cache_creation_input_tokens"] for u in usages[1:]
    )


def test_a_sandbox_cannot_underbill_an_hours_cache_write(tmp_path: Path) -> None:
    """A CLI asks for a 1-hour cache (billed at 2x input, not 1.25x): the broker bills the
    write at the hour's price from the provider's own usage, and its reservation covered it."""
    fake = FakeModelServer(parse_script({"rules": [{"when": "go", "replies": ["ok"]}]})).start()
    broker = Broker(
        upstream=fake.url,
        api_key="k",
        model=SONNET,
        exchanges=tmp_path / "x.jsonl",
        budget=1.0,
        run_ledger=RunLedger(1.0),
    ).start()
    mark = {"type": "ephemeral", "ttl": "1h"}
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 16,
        "system": [{"type": "text", "text": LONG, "cache_control": mark}],
        "messages": [{"role": "user", "content": "go"}],
    }
    try:
        reply = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
    finally:
        broker.stop()
        fake.stop()
    assert reply.status_code == 200
    (line,) = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    written = fake.log()[0].usage["cache_creation"]["ephemeral_1h_input_tokens"]
    assert written > 2000 and line["usage"]["cache_write_1h_tokens"] == written
    assert line["cost_usd"] >= written * 6.0 / 1_000_000  # $6/M: twice Sonnet's input
    assert line["cost_usd"] <= worst_case_usd(SONNET, len(json.dumps(body)), 16)


@pytest.mark.anyio
async def test_judge_calls_on_a_case_read_its_task_and_rubric_from_the_cache(fake) -> None:
    """The judge's system prompt, task and rubric are the same for every call on a case:
    the first call writes them, the next reads them, and nothing of a call's own (its frame
    id, the attempts) is before the breakpoint. The ledger bills the reads and writes."""
    import random

    from skillbench.grading.judge import judge

    server = fake(
        {"rules": [{"when": "Which attempt", "replies": ['{"nonce": "$FRAME_ID", "winner": "A"}']}]}
    )
    run = RunLedger(None)
    model = MeteredModel(resolve_model(SONNET, max_retries=0), run, {}, "judge")
    rubric = "Prefer the attempt that follows the house rules. " * 200  # ~2,500 tokens
    for n in range(2):
        await judge(
            model,
            task="review the change",
            rubric=rubric,
            candidate=f"candidate {n}",
            opponent=f"opponent {n}",
            rng=random.Random(n),
        )
    await model.aclose()
    logged = server.log()
    assert len(logged) == 4  # two pairs, each asked in both orders
    first, *rest = [r.usage for r in logged]
    assert first["cache_creation_input_tokens"] > 2048 and first["cache_read_input_tokens"] == 0
    assert all(u["cache_read_input_tokens"] == first["cache_creation_input_tokens"] for u in rest)
    for request in logged:
        (message,) = request.body["messages"]
        cached, asked = message["content"]
        assert "cache_control" in cached and "cache_control" not in asked
        nonce = re.search(r"frame id is (\w+)", asked["text"])
        assert nonce and nonce.group(1) not in json.dumps(request.body["system"]) + cached["text"]
    billed = sum(cost_usd(SONNET, anthropic_usage(r.usage)) or 0.0 for r in logged)
    assert run.snapshot().by_kind == {"judge": pytest.approx(billed)}


@pytest.mark.anyio
async def test_grader_calls_cache_the_task_and_keep_the_canary_after_it(fake) -> None:
    """The grader's stable prefix (its instructions and the task) is cached across the calls
    of a case; the canary, random per call, and the frame id come after the breakpoint."""
    from skillbench.grading.expect import _grade_once

    reply = (
        '{"nonce": "$FRAME_ID", "results": [{"id": 1, "passed": false}, '
        '{"id": 2, "passed": false}]}'
    )
    server = fake({"rules": [{"when": "Grade every", "replies": [reply]}]})
    run = RunLedger(None)
    model = MeteredModel(resolve_model(SONNET, max_retries=0), run, {}, "grader")
    task = "Write the release notes for the change. " * 250  # ~2,500 tokens
    for n in range(2):
        graded, why, _ = await _grade_once(model, task, ["notes exist"], f"trace {n}", "(none)")
        assert graded is not None, why
    await model.aclose()
    first, second = server.log()
    assert first.usage["cache_creation_input_tokens"] > 2048
    assert second.usage["cache_read_input_tokens"] == first.usage["cache_creation_input_tokens"]
    for request in (first, second):
        (message,) = request.body["messages"]
        cached, asked = message["content"]
        assert "cache_control" in cached and ".canary" not in cached["text"]
        assert ".canary" in asked["text"] and "cache_control" not in asked
    named = [
        re.search(r"named (\w+)\.canary", r.body["messages"][0]["content"][1]["text"])
        for r in (first, second)
    ]
    canaries = {m.group(1) for m in named if m is not None}
    assert len(canaries) == 2  # still fresh per call
    billed = sum(cost_usd(SONNET, anthropic_usage(r.usage)) or 0.0 for r in (first, second))
    assert run.snapshot().by_kind == {"grader": pytest.approx(billed)}
