"""`anthropic/<model>`: the Messages API through the official `anthropic` SDK.

The prompt is sent in the form the API caches (docs/agents.md, prompt caching): a
`cache_control` breakpoint on the last tool, on the system prompt and on the latest blocks a
caller marked as repeated by later calls (`TextBlock.cache`: the builtin loop marks each turn's
last block, a catalog call its catalog), at most the API's 4, newest first. The API caches
tools, then system, then messages, so a breakpoint covers everything before it and reads the
longest cached prefix within 20 blocks of it. Retries and timeouts are the SDK's own.
"""

from __future__ import annotations

from typing import Any

import anthropic

from skillbench.models.base import (
    Completion,
    Message,
    ModelError,
    StopReason,
    TextBlock,
    ToolCall,
    ToolSpec,
    anthropic_usage,
    describe_error,
)

_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
    "pause_turn": "end_turn",
}


MAX_BREAKPOINTS = 4  # the API answers 400 to a fifth


def _wire_message(message: Message) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                blocks.append({"type": "text", "text": block.text})
            if block.cache and blocks:  # (an empty block is not sent: the one before is marked)
                blocks[-1]["cache"] = True
        elif isinstance(block, ToolCall):
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
            )
        else:
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": block.id,
                    "content": block.text or "(no output)",
                    "is_error": block.is_error,
                    **({"cache": True} if block.cache else {}),
                }
            )
    return {"role": message.role, "content": blocks}


def _breakpoints(
    tools: list[dict[str, Any]], system: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> None:
    """Put cache_control on the last tool, the system prompt and the newest marked blocks
    (the `cache` key _wire_message left on them, removed here), at most MAX_BREAKPOINTS."""
    marked = [b for m in messages for b in m["content"] if b.pop("cache", False)]
    stable = [part[-1] for part in (tools, system) if part]
    for block in stable + marked[::-1][: MAX_BREAKPOINTS - len(stable)]:
        block["cache_control"] = {"type": "ephemeral"}


class AnthropicModel:
    """A Claude model through the Anthropic SDK (ANTHROPIC_BASE_URL is honoured by the SDK)."""

    def __init__(
        self, ref: str, *, max_retries: int = 4, timeout: float = 600.0, caching: bool = True
    ):
        self.ref = ref
        self.model = ref.split("/", 1)[1]
        self.caching = caching  # False: no breakpoints (bench/caching.py measures the saving)
        self._client = anthropic.AsyncAnthropic(max_retries=max_retries, timeout=timeout)

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self, *, system: str, messages: list[Message], tools: list[ToolSpec], max_tokens: int
    ) -> Completion:
        wire_tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
        wire_system = [{"type": "text", "text": system}] if system else []
        wire_messages = [_wire_message(m) for m in messages]
        if self.caching:
            _breakpoints(wire_tools, wire_system, wire_messages)
        else:
            for block in (b for m in wire_messages for b in m["content"]):
                block.pop("cache", None)
        kwargs: dict[str, Any] = dict(
            model=self.model, max_tokens=max_tokens, messages=wire_messages
        )
        if wire_system:
            kwargs["system"] = wire_system
        if wire_tools:
            kwargs["tools"] = wire_tools
        try:
            response = await self._client.messages.create(**kwargs)
        except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
            raise ModelError("auth", describe_error(exc)) from exc
        except anthropic.BadRequestError as exc:
            raise ModelError("bad_request", describe_error(exc)) from exc
        except anthropic.AnthropicError as exc:
            raise ModelError("infrastructure", describe_error(exc)) from exc
        except ValueError as exc:  # a body the SDK could not decode
            raise ModelError("infrastructure", f"malformed response: {exc}") from exc
        return _completion(response, self.ref)


def _completion(response: Any, ref: str) -> Completion:
    try:
        content: list[TextBlock | ToolCall] = []
        for block in response.content:
            if block.type == "text":
                content.append(TextBlock(block.text))
            elif block.type == "tool_use":
                content.append(ToolCall(block.id, block.name, dict(block.input or {})))
        usage = response.usage
        return Completion(
            content=tuple(content),
            stop_reason=_STOP.get(response.stop_reason or "end_turn", "end_turn"),
            usage=anthropic_usage(usage.model_dump()),
            model=ref,
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise ModelError("infrastructure", f"malformed response: {exc}") from exc
