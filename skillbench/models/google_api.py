"""`google/<model>`: the Gemini API through Google's `google-genai` SDK (docs/agents.md).

The key is GEMINI_API_KEY (or GOOGLE_API_KEY, the SDK's own first choice); GOOGLE_GEMINI_BASE_URL
points the SDK elsewhere (a gateway, the fake model server). Retries and timeouts are the SDK's
own. Gemini's function calls may carry no id, and its thinking models sign each call: ids are
made here and each call's signature is kept by id, so the next turn sends it back as the API
requires.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from skillbench.models.base import (
    Completion,
    ErrorKind,
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

try:  # an extra (`pip install 'skillbench[google]'`): only a google/ model needs it
    from google import genai
    from google.genai import errors, types
except ImportError:  # pragma: no cover - the dev install has it
    genai = None  # type: ignore[assignment]

_STOP: dict[str, StopReason] = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
}
_ids = itertools.count(1)


class GoogleModel:
    """A Gemini model through the google-genai SDK."""

    def __init__(self, ref: str, *, max_retries: int = 4, timeout: float = 600.0):
        if genai is None:
            raise ModelError(
                "auth",
                "google/<model> needs the google-genai SDK: pip install 'skillbench[google]'",
            )
        self.ref = ref
        self.model = ref.split("/", 1)[1]
        key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        options = types.HttpOptions(
            base_url=os.environ.get("GOOGLE_GEMINI_BASE_URL") or None,
            api_version="v1beta",  # the version Gemini CLI speaks: one wire for both
            timeout=int(timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=max_retries + 1),
        )
        self._client = genai.Client(api_key=key or None, http_options=options)
        self._signatures: dict[str, bytes] = {}  # a call's thought signature, by its id

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    async def complete(
        self, *, system: str, messages: list[Message], tools: list[ToolSpec], max_tokens: int
    ) -> Completion:
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            max_output_tokens=max_tokens,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        if tools:
            config.tools = [
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name=t.name,
                            description=t.description,
                            parameters_json_schema=t.parameters,
                        )
                        for t in tools
                    ]
                )
            ]
        contents = [self._content(m) for m in messages]
        try:
            response = await self._client.aio.models.generate_content(
                model=self.model, contents=contents, config=config
            )
        except errors.ClientError as exc:
            kind: ErrorKind = "auth" if exc.code in (401, 403) else "bad_request"
            raise ModelError("infrastructure" if exc.code == 429 else kind, _line(exc)) from exc
        except errors.APIError as exc:
            raise ModelError("infrastructure", _line(exc)) from exc
        except ValueError as exc:  # a body the SDK could not decode
            raise ModelError("infrastructure", f"malformed response: {exc}") from exc
        except Exception as exc:  # the SDK's transport (httpx) and decoding errors
            raise ModelError("infrastructure", describe_error(exc)) from exc
        return self._completion(response)

    def _content(self, message: Message) -> Any:
        parts = []
        for block in message.content:
            if isinstance(block, TextBlock):
                if block.text:
                    parts.append(types.Part(text=block.text))
            elif isinstance(block, ToolCall):
                call = types.FunctionCall(name=block.name, args=block.arguments)
                parts.append(
                    types.Part(function_call=call, thought_signature=self._signatures.get(block.id))
                )
            elif isinstance(block, ToolResult):
                result = {"error": block.text} if block.is_error else {"output": block.text}
                parts.append(
                    types.Part(
                        function_response=types.FunctionResponse(name=block.name, response=result)
                    )
                )
        role = "model" if message.role == "assistant" else "user"
        return types.Content(role=role, parts=parts or [types.Part(text="")])

    def _completion(self, response: Any) -> Completion:
        try:
            candidate = (response.candidates or [None])[0]
            content: list[TextBlock | ToolCall] = []
            parts = candidate.content.parts if candidate and candidate.content else None
            for part in parts or ():
                if part.thought:
                    continue  # its thinking, not its answer
                if part.text:
                    content.append(TextBlock(part.text))
                elif part.function_call is not None:
                    tid = part.function_call.id or f"gemini_call_{next(_ids)}"
                    if part.thought_signature:
                        self._signatures[tid] = part.thought_signature
                    args = dict(part.function_call.args or {})
                    content.append(ToolCall(tid, part.function_call.name or "", args))
            finish = str(getattr(candidate, "finish_reason", None) or "STOP").rsplit(".", 1)[-1]
            stop = _STOP.get(finish, "end_turn")
            if candidate is None:  # the prompt itself was blocked
                stop = "refusal"
            elif stop == "end_turn" and any(isinstance(b, ToolCall) for b in content):
                stop = "tool_use"
            return Completion(
                content=tuple(content), stop_reason=stop, usage=_usage(response), model=self.ref
            )
        except (AttributeError, TypeError, ValueError) as exc:
            raise ModelError("infrastructure", f"malformed response: {exc}") from exc


def _usage(response: Any) -> Usage:
    """The call's tokens: the prompt count includes the cached ones; thinking is output."""
    meta = response.usage_metadata
    if meta is None:
        return Usage()
    cached = meta.cached_content_token_count or 0
    prompt = (meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0)
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cache_read_tokens=cached,
    )


def _line(exc: Exception) -> str:
    return " ".join(describe_error(exc).split())[:500]
