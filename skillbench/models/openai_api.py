"""`openai/<model>`: Chat Completions with tools through the official `openai` SDK.

Works with any OpenAI-compatible server (vLLM, Ollama, OpenRouter, ...) through
OPENAI_BASE_URL. Retries and timeouts are the SDK's own.
"""

from __future__ import annotations

import json
from typing import Any

import openai

from skillbench.models.base import (
    Completion,
    Message,
    ModelError,
    StopReason,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    describe_error,
)

_STOP: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def _wire_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            calls = message.tool_calls
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in calls
                ]
            out.append(entry)
            continue
        for block in message.content:  # tool results become one `tool` message each
            if isinstance(block, ToolResult):
                out.append({"role": "tool", "tool_call_id": block.id, "content": block.text})
        if message.text:
            out.append({"role": "user", "content": message.text})
    return out


class OpenAIModel:
    """A chat model through the OpenAI SDK (OPENAI_BASE_URL is honoured by the SDK)."""

    def __init__(self, ref: str, *, max_retries: int = 4, timeout: float = 600.0):
        self.ref = ref
        self.model = ref.split("/", 1)[1]
        self._client = openai.AsyncOpenAI(max_retries=max_retries, timeout=timeout)

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self, *, system: str, messages: list[Message], tools: list[ToolSpec], max_tokens: int
    ) -> Completion:
        kwargs: dict[str, Any] = dict(
            model=self.model,
            messages=_wire_messages(system, messages),
            max_completion_tokens=max_tokens,
        )
        if tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
        try:
            response = await self._client.chat.completions.create(**kwargs)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise ModelError("auth", describe_error(exc)) from exc
        except openai.BadRequestError as exc:
            raise ModelError("bad_request", describe_error(exc)) from exc
        except openai.OpenAIError as exc:
            raise ModelError("infrastructure", describe_error(exc)) from exc
        except ValueError as exc:
            raise ModelError("infrastructure", f"malformed response: {exc}") from exc
        return _completion(response, self.ref)


def _completion(response: Any, ref: str) -> Completion:
    try:
        choice = response.choices[0]
        message = choice.message
        content: list[TextBlock | ToolCall] = []
        if message.content:
            content.append(TextBlock(message.content))
        for call in message.tool_calls or ():
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {"_unparsed_arguments": call.function.arguments}
            if not isinstance(arguments, dict):
                arguments = {"_unparsed_arguments": call.function.arguments}
            content.append(ToolCall(call.id, call.function.name, arguments))
        stop = _STOP.get(choice.finish_reason or "stop", "end_turn")
        if getattr(message, "refusal", None):
            stop = "refusal"
            content.append(TextBlock(message.refusal))
        usage = response.usage
        cached = 0
        if usage is not None and usage.prompt_tokens_details is not None:
            cached = usage.prompt_tokens_details.cached_tokens or 0
        return Completion(
            content=tuple(content),
            stop_reason=stop,
            usage=Usage(
                input_tokens=(usage.prompt_tokens - cached) if usage else 0,
                output_tokens=usage.completion_tokens if usage else 0,
                cache_read_tokens=cached,
            ),
            model=ref,
        )
    except (AttributeError, TypeError, IndexError) as exc:
        raise ModelError("infrastructure", f"malformed response: {exc}") from exc
