"""The Model contract: system + messages + tools in, assistant content blocks out.

Providers translate to and from their wire protocol; everything above this layer sees only
these types. A provider raises `ModelError` for any failed call, classified by `kind`.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from skillbench.errors import SkillbenchError

StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal"]
ErrorKind = Literal["infrastructure", "auth", "bad_request"]


class TextBlock(msgspec.Struct, frozen=True, tag="text"):
    text: str
    # the prompt up to and including this block is repeated by later calls: a provider that
    # caches by breakpoint (Anthropic) is asked to cache it
    cache: bool = False


class ToolCall(msgspec.Struct, frozen=True, tag="tool_call"):
    id: str
    name: str
    arguments: dict[str, Any]


class ToolResult(msgspec.Struct, frozen=True, tag="tool_result"):
    id: str
    name: str
    text: str
    is_error: bool = False
    cache: bool = False  # as TextBlock.cache


Block = TextBlock | ToolCall | ToolResult


def text_of(content: tuple[Block, ...]) -> str:
    """The text blocks of some content, joined."""
    return "".join(b.text for b in content if isinstance(b, TextBlock))


def calls_of(content: tuple[Block, ...]) -> list[ToolCall]:
    """The tool calls of some content, in order."""
    return [b for b in content if isinstance(b, ToolCall)]


class Message(msgspec.Struct, frozen=True):
    """One conversation turn. User turns carry text or tool results; assistant turns carry
    text and tool calls."""

    role: Literal["user", "assistant"]
    content: tuple[Block, ...]

    @property
    def text(self) -> str:
        return text_of(self.content)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return calls_of(self.content)


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool the model may call: a name, what it does, a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class Usage(msgspec.Struct, frozen=True):
    """Tokens of one call (or a sum of calls). `input_tokens` excludes cached tokens;
    `cache_write_tokens` are written for the default 5 minutes, `cache_write_1h_tokens` for
    an hour (Anthropic bills them at 2x input, not 1.25x)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )


def anthropic_usage(raw: dict[str, Any]) -> Usage:
    """Anthropic's `usage` object: `cache_creation_input_tokens` counts every cache write,
    and its `cache_creation` breakdown says how many of them were for an hour."""

    def count(value: Any) -> int:
        return value if isinstance(value, int) and value > 0 else 0

    writes = count(raw.get("cache_creation_input_tokens"))
    breakdown = raw.get("cache_creation")
    hour = count(breakdown.get("ephemeral_1h_input_tokens")) if isinstance(breakdown, dict) else 0
    hour = min(hour, writes) if writes else hour
    return Usage(
        input_tokens=count(raw.get("input_tokens")),
        output_tokens=count(raw.get("output_tokens")),
        cache_read_tokens=count(raw.get("cache_read_input_tokens")),
        cache_write_tokens=max(0, writes - hour),
        cache_write_1h_tokens=hour,
    )


class Completion(msgspec.Struct, frozen=True):
    """The assistant's answer to one call."""

    content: tuple[TextBlock | ToolCall, ...]
    stop_reason: StopReason
    usage: Usage
    model: str

    @property
    def text(self) -> str:
        return text_of(self.content)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return calls_of(self.content)


class ModelError(SkillbenchError):
    """A model call failed. `infrastructure`: rate limits, 5xx, timeouts, connection and
    malformed responses, after the SDK's own retries. `auth`: bad or missing credentials or
    permission. `bad_request`: the request was refused as invalid (e.g. too long)."""

    def __init__(self, kind: ErrorKind, message: str):
        self.kind = kind
        super().__init__(f"{kind}: {message}")


def describe_error(exc: Exception) -> str:
    """One line naming an SDK error and its HTTP status, for reports."""
    status = getattr(exc, "status_code", None)
    head = type(exc).__name__ + (f" ({status})" if status else "")
    return f"{head}: {exc}"[:500]


class Model(Protocol):
    """A chat model reachable through one provider."""

    ref: str  # "provider/model", as the user wrote it

    async def complete(
        self,
        *,
        system: str,
        messages: list[Message],
        tools: list[ToolSpec],
        max_tokens: int,
    ) -> Completion: ...

    async def aclose(self) -> None:
        """Release the HTTP connections (before the event loop closes)."""
        ...
