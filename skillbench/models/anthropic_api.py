"""`anthropic/<model>`: the Messages API through the official `anthropic` SDK.

The system prompt and the tool list carry cache_control, so every turn after the first
reads them from the prompt cache. Retries and timeouts are the SDK's own.
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
    Usage,
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


def _wire_message(message: Message) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                blocks.append({"type": "text", "text": block.text})
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
                }
            )
    return {"role": message.role, "content": blocks}


class AnthropicModel:
    """A Claude model through the Anthropic SDK (ANTHROPIC_BASE_URL is honoured by the SDK)."""

    def __init__(self, ref: str, *, max_retries: int = 4, timeout: float = 600.0):
        self.ref = ref
        self.model = ref.split("/", 1)[1]
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
        if wire_tools:
            wire_tools[-1]["cache_control"] = {"type": "ephemeral"}
        kwargs: dict[str, Any] = dict(
            model=self.model,
            max_tokens=max_tokens,
            messages=[_wire_message(m) for m in messages],
        )
        if system:
            kwargs["system"] = [
                {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
            ]
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
            usage=Usage(
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_read_tokens=usage.cache_read_input_tokens or 0,
                cache_write_tokens=usage.cache_creation_input_tokens or 0,
            ),
            model=ref,
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise ModelError("infrastructure", f"malformed response: {exc}") from exc
