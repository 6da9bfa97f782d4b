"""The providers' wire formats as the fake model server speaks them: what a request's
system prompt, first and last user messages and turn count are (Anthropic Messages, OpenAI
Chat Completions, OpenAI Responses, the Gemini API's generateContent), the reply a script's
play becomes in each, its stream of server-sent events, and each protocol's error body."""

from __future__ import annotations

import json
import time
from typing import Any

from skillbench.models.fake_cache import CacheUse, tokens
from skillbench.models.script import Play


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def anthropic_shape(body: dict[str, Any]) -> tuple[str, str, str, int]:
    """A Messages request: `system` and any system-role messages are the system prompt
    (Claude Code sends its environment, agents and skills listing as a system message after
    the first user turn when it does not know the model's name, as for `scripted/demo`)."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    system = text_of(body.get("system", "")) + "".join(
        "\n" + text_of(m.get("content")) for m in messages if m.get("role") == "system"
    )
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    turns = sum(m.get("role") == "assistant" for m in messages)
    return system, (users[0] if users else ""), (users[-1] if users else ""), turns


def openai_shape(body: dict[str, Any]) -> tuple[str, str, str, int]:
    messages = body.get("messages", [])
    system = "".join(text_of(m.get("content")) for m in messages if m.get("role") == "system")
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    turns = sum(m.get("role") == "assistant" for m in messages)
    return system, (users[0] if users else ""), (users[-1] if users else ""), turns


_OUTPUT_ITEMS = {"function_call", "custom_tool_call", "reasoning", "local_shell_call"}
_CONTEXT_TAGS = ("<environment_context>", "<user_instructions>", "# AGENTS.md")


def responses_shape(body: dict[str, Any]) -> tuple[str, str, str, int]:
    """A Responses request: the instructions and developer messages are the system prompt;
    the user messages the harness adds about its environment are not the user's."""
    items = [i for i in body.get("input", []) if isinstance(i, dict)]
    system = text_of(body.get("instructions", "")) + "".join(
        text_of(i.get("content")) for i in items if i.get("role") in ("developer", "system")
    )
    users = [
        t
        for i in items
        if i.get("role") == "user"
        if not (t := text_of(i.get("content"))).lstrip().startswith(_CONTEXT_TAGS)
    ]
    turns, was_output = 0, False
    for item in items:  # one assistant turn is a run of output items
        output = item.get("type") in _OUTPUT_ITEMS or item.get("role") == "assistant"
        turns += output and not was_output
        was_output = output
    return system, (users[0] if users else ""), (users[-1] if users else ""), turns


def _parts_text(content: Any) -> str:
    parts = content.get("parts") if isinstance(content, dict) else None
    return "".join(
        str(p["text"])
        for p in parts or ()
        if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def gemini_shape(body: dict[str, Any]) -> tuple[str, str, str, int]:
    """A generateContent request: `systemInstruction` is the system prompt, the `user`
    contents' text parts the user's (a function response has none), each `model` content
    one assistant turn."""
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    system = _parts_text(body.get("systemInstruction") or body.get("system_instruction"))
    users = [_parts_text(c) for c in contents if c.get("role", "user") == "user"]
    turns = sum(c.get("role") == "model" for c in contents)
    return system, (users[0] if users else ""), (users[-1] if users else ""), turns


ERROR_KINDS = {
    429: "rate_limit_error",
    401: "authentication_error",
    403: "permission_error",
    400: "invalid_request_error",
}


def message_events(reply: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A Messages reply as the API streams it, block by block."""
    content, usage = reply["content"], reply["usage"]
    start = {**reply, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": start})]
    for i, block in enumerate(content):
        opened: dict[str, Any]
        delta: dict[str, Any]
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"index": i, "content_block": opened}),
            ("content_block_delta", {"index": i, "delta": delta}),
            ("content_block_stop", {"index": i}),
        ]
    events += [
        (
            "message_delta",
            {
                "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        ),
        ("message_stop", {}),
    ]
    return events


def response_events(reply: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A Responses reply as the API streams it: created, each output item added, its text
    delta, done, then completed with the usage."""
    opened = {**reply, "status": "in_progress", "output": [], "usage": None}
    events: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": opened})]
    for i, item in enumerate(reply["output"]):
        events.append(("response.output_item.added", {"output_index": i, "item": item}))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                (
                    "response.output_text.delta",
                    {"item_id": item["id"], "output_index": i, "content_index": 0, "delta": text},
                )
            )
        events.append(("response.output_item.done", {"output_index": i, "item": item}))
    events.append(("response.completed", {"response": reply}))
    return events


def gemini_chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """A generateContent reply as the API streams it: each part in a chunk of its own, the
    usage so far on each (the prompt's from the first), the finish reason on the last."""
    (candidate,) = reply["candidates"]
    parts, usage = candidate["content"]["parts"] or [{"text": ""}], reply["usageMetadata"]
    chunks = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        chunk_candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [part]},
            "index": 0,
        }
        if last:
            chunk_candidate["finishReason"] = candidate["finishReason"]
        so_far = usage if last else {"promptTokenCount": usage["promptTokenCount"]}
        chunks.append(
            {
                "candidates": [chunk_candidate],
                "usageMetadata": so_far,
                "modelVersion": reply["modelVersion"],
                "responseId": reply["responseId"],
            }
        )
    return chunks


_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}


def error_body(protocol: str, kind: str, message: str, status: int = 400) -> dict[str, Any]:
    if protocol == "gemini":  # google.rpc.Status
        code = status if status in _GEMINI_STATUS else 500
        return {
            "error": {
                "code": code,
                "message": message,
                "status": _GEMINI_STATUS.get(code, "INTERNAL"),
            }
        }
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"type": kind, "message": message, "code": kind}}


# A reply's ids carry the request's serial number on its server, unique as a provider's are:
# two sessions with the same script share no prefix past their first reply (the cache sees
# what it would see), whatever they say.


def _prompt_tokens(raw: bytes, cached: CacheUse) -> int:
    """A request's prompt tokens: its content as the cache compares it (tools, system and
    messages; not the body's JSON framing, its other fields nor its cache markers, which a
    provider does not bill as prompt), or the whole body when it has no content to compare."""
    return cached.prompt or tokens(raw.decode(errors="replace"))


def _anthropic_reply(body: dict[str, Any], play: Play, raw: bytes, serial: int, cached: CacheUse):
    content: list[dict[str, Any]] = [{"type": "text", "text": play.text}] if play.text else []
    for j, (name, args) in enumerate(play.tool_calls):
        content.append(
            {"type": "tool_use", "id": f"toolu_{serial}_{j}", "name": name, "input": args}
        )
    # input_tokens is what comes after the last cached prefix: the three add up to the prompt
    prompt = _prompt_tokens(raw, cached)
    usage: dict[str, Any] = {
        "input_tokens": max(1, prompt - cached.read - cached.write),
        "output_tokens": tokens(play.text + json.dumps([a for _, a in play.tool_calls])),
        "cache_creation_input_tokens": cached.write,
        "cache_read_input_tokens": cached.read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": cached.write_5m,
            "ephemeral_1h_input_tokens": cached.write_1h,
        },
    }
    stop = play.stop_reason or ("tool_use" if play.tool_calls else "end_turn")
    reply = {
        "id": f"msg_fake_{serial}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    return reply, usage


_OPENAI_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def _openai_reply(body: dict[str, Any], play: Play, raw: bytes, serial: int, cached: CacheUse):
    calls = [
        {
            "id": f"call_{serial}_{j}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for j, (name, args) in enumerate(play.tool_calls)
    ]
    prompt = _prompt_tokens(raw, cached)  # OpenAI counts the cached tokens inside the prompt
    completion = tokens(play.text + json.dumps([a for _, a in play.tool_calls]))
    stop = play.stop_reason or ("tool_use" if play.tool_calls else "end_turn")
    message: dict[str, Any] = {"role": "assistant", "content": play.text or None}
    if calls:
        message["tool_calls"] = calls
    reply = {
        "id": f"chatcmpl-fake-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": _OPENAI_FINISH[stop]}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached.read},
        },
    }
    usage = {
        "input_tokens": prompt - cached.read,
        "output_tokens": completion,
        "cache_read_input_tokens": cached.read,
    }
    return reply, usage


def chat_chunks(reply: dict[str, Any], usage: bool) -> list[dict[str, Any]]:
    """A Chat Completion as its stream's chunks (before the closing `data: [DONE]`): the text,
    the tool calls, the finish reason, then (when `stream_options.include_usage` asked) the
    usage in a chunk of its own with no choices, as OpenAI streams it."""
    choice = reply["choices"][0]
    message, head = choice["message"], {k: reply[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": message.get("content") or ""})]
    if message.get("tool_calls"):
        calls = [{"index": j, **c} for j, c in enumerate(message["tool_calls"])]
        out.append(chunk({"tool_calls": calls}))
    out.append(chunk({}, choice["finish_reason"]))
    if usage:
        out.append({**head, "choices": [], "usage": reply["usage"]})
    return out


def _responses_reply(body: dict[str, Any], play: Play, raw: bytes, serial: int, cached: CacheUse):
    output: list[dict[str, Any]] = []
    if play.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{serial}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": play.text, "annotations": []}],
            }
        )
    # Codex offers an MCP server's tools as a namespace tool (`mcp__calc` holding `answer`):
    # a scripted `mcp__calc__answer` is a call of `answer` in that namespace, as models send it
    namespaces = {
        t.get("name")
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "namespace"
    }
    for j, (name, args) in enumerate(play.tool_calls):
        call = {
            "type": "function_call",
            "id": f"fc_{serial}_{j}",
            "status": "completed",
            "call_id": f"call_{serial}_{j}",
            "name": name,
            "arguments": json.dumps(args),
        }
        space, sep, tool = name.rpartition("__")
        if sep and space in namespaces:
            call.update(name=tool, namespace=space)
        output.append(call)
    prompt = _prompt_tokens(raw, cached)
    completion = tokens(play.text + json.dumps([a for _, a in play.tool_calls]))
    reply = {
        "id": f"resp_fake_{serial}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": body.get("model", "fake"),
        "output": output,
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached.read},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }
    usage = {
        "input_tokens": prompt - cached.read,
        "output_tokens": completion,
        "cache_read_input_tokens": cached.read,
    }
    return reply, usage


_GEMINI_FINISH = {
    "end_turn": "STOP",
    "tool_use": "STOP",
    "max_tokens": "MAX_TOKENS",
    "refusal": "SAFETY",
}


def _gemini_reply(body: dict[str, Any], play: Play, raw: bytes, serial: int, cached: CacheUse):
    """The model's name is in the path, not the body: the server passes it as `model`."""
    parts: list[dict[str, Any]] = [{"text": play.text}] if play.text else []
    parts += [{"functionCall": {"name": name, "args": args}} for name, args in play.tool_calls]
    prompt = _prompt_tokens(raw, cached)  # Gemini counts the cached tokens inside the prompt
    completion = tokens(play.text + json.dumps([a for _, a in play.tool_calls]))
    stop = play.stop_reason or ("tool_use" if play.tool_calls else "end_turn")
    reply = {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": _GEMINI_FINISH[stop],
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": completion,
            "cachedContentTokenCount": cached.read,
            "totalTokenCount": prompt + completion,
        },
        "modelVersion": body.get("model", "fake"),
        "responseId": f"gemini-fake-{serial}",
    }
    usage = {
        "input_tokens": prompt - cached.read,
        "output_tokens": completion,
        "cache_read_input_tokens": cached.read,
    }
    return reply, usage


REPLIES = {
    "anthropic": _anthropic_reply,
    "openai": _openai_reply,
    "responses": _responses_reply,
    "gemini": _gemini_reply,
}
