"""The fake model server's prompt cache: a prefix cache that reads only what an earlier
request wrote, the way each provider describes its own (a test or bench that shows a saving
shows one the provider would bill).

Anthropic caches by breakpoint: the prompt is tools, then system, then messages, block by
block; a block carrying `cache_control` marks a prefix to cache (at most 4 a request, a 5th is
a 400), a prefix shorter than the model's minimum is never cached (ANTHROPIC_MIN_TOKENS, by
the request's model), and a breakpoint reads the longest cached prefix ending at it or at one
of the 20 blocks before it; a request with tools also carries the system prompt the API adds to
enable tool use (TOOL_USE_TOKENS), billed as input and cached with the tools. OpenAI caches
automatically: the longest prefix seen before, counted in 128-token steps from 1024 tokens;
Gemini's implicit cache is taken the same way (1024 tokens is Gemini 2.5 Flash's minimum).
An entry exists once its request was answered and lives for its TTL (5 minutes, or an hour
for Anthropic's `"ttl": "1h"`). The prefix is compared by items here (a tool, a system
block, a content block, a message), coarser than a provider's tokens, so the fake never reads
more than the provider would.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any

import msgspec

from skillbench.models.pricing import TOOL_USE_TOKENS

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
OPENAI_MIN_TOKENS = 1024
OPENAI_STEP_TOKENS = 128
_TTL = {"5m": 300.0, "1h": 3600.0}

# Anthropic's minimum cacheable prompt by model (longest matching prefix of the request's
# `model`; anything else 1024, the docs' figure for Sonnet 4.5, Opus 4.1 and older). Sonnet
# 4.6 is documented at 1024 but caches nothing under 2048 tokens in practice
# (anthropics/anthropic-sdk-python#1194, BerriAI/litellm-docs#49): the fake takes the larger,
# so it never reads what the API would not.
ANTHROPIC_MIN_TOKENS = {
    "claude-opus-4-5": 4096,
    "claude-opus-4-6": 4096,
    "claude-haiku-4-5": 4096,
    "claude-sonnet-4-6": 2048,
    "claude-3-haiku": 2048,
    "claude-3-5-haiku": 2048,
}
DEFAULT_MIN_TOKENS = 1024


def tool_use_tokens(body: dict[str, Any]) -> int:
    """The tokens of the tool-use system prompt a Messages request is billed for."""
    if not body.get("tools"):
        return 0
    choice = body.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else None
    # in the cached prefix: a cached turn of Claude Code reports a handful of input tokens
    return TOOL_USE_TOKENS.get(str(kind or "auto"), TOOL_USE_TOKENS["auto"])


def anthropic_min_tokens(model: str) -> int:
    """The shortest prefix an Anthropic breakpoint caches on `model`."""
    keys = [k for k in ANTHROPIC_MIN_TOKENS if model.startswith(k)]
    return ANTHROPIC_MIN_TOKENS[max(keys, key=len)] if keys else DEFAULT_MIN_TOKENS


class CacheUse(msgspec.Struct, frozen=True):
    """What one request read from the cache and wrote to it, in tokens."""

    prompt: int = 0  # tokens of the whole prompt as compared (read + written + the rest)
    read: int = 0
    write_5m: int = 0
    write_1h: int = 0

    @property
    def write(self) -> int:
        return self.write_5m + self.write_1h


class TooManyBreakpoints(ValueError):
    """More cache_control blocks than the API takes (it answers 400)."""


def tokens(text: str) -> int:
    """The fake's token count: four characters a token, at least one."""
    return max(1, len(text) // 4)


def _canonical(item: Any) -> str:
    """An item as compared and counted: its JSON without the cache marker (moving a
    breakpoint does not change the prefix)."""
    if isinstance(item, dict):
        item = {k: v for k, v in item.items() if k != "cache_control"}
    return json.dumps(item, sort_keys=True, separators=(",", ":"))


class _Item(msgspec.Struct, frozen=True):
    key: str  # the hash of the prefix up to and including this item
    total: int  # tokens of that prefix
    ttl: str | None  # the breakpoint's TTL when the item carries cache_control


def _items(parts: list[Any], start: int = 0) -> list[_Item]:
    """Each part's prefix; `start` tokens precede the first part (and key the prefix)."""
    out: list[_Item] = []
    digest, total = hashlib.sha256(str(start).encode() + b"\0"), start
    for part in parts:
        text = _canonical(part)
        digest.update(text.encode() + b"\0")
        total += tokens(text)
        mark = part.get("cache_control") if isinstance(part, dict) else None
        ttl = str(mark.get("ttl") or "5m") if isinstance(mark, dict) else None
        out.append(_Item(digest.hexdigest(), total, ttl))
    return out


def anthropic_parts(body: dict[str, Any]) -> list[Any]:
    """A Messages request in the order the API caches it: tools, system, then each
    message's content blocks (a block tagged with its message's role)."""
    parts: list[Any] = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    system = body.get("system")
    if isinstance(system, str) and system:
        parts.append({"type": "text", "text": system})
    elif isinstance(system, list):
        parts += [b for b in system if isinstance(b, dict)]
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict):
                parts.append({**block, "role": message.get("role")})
    return parts


def openai_parts(body: dict[str, Any], protocol: str) -> list[Any]:
    """A Chat Completions, Responses or Gemini request as a sequence of prefix items: tools
    first (the provider counts them in the cached prefix), then instructions and each message."""
    parts: list[Any] = [{"tools": body.get("tools") or []}]
    if protocol == "gemini":
        parts.append({"systemInstruction": body.get("systemInstruction") or ""})
        parts += list(body.get("contents") or [])
    elif protocol == "responses":
        parts.append({"instructions": body.get("instructions") or ""})
        parts += list(body.get("input") or [])
    else:
        parts += list(body.get("messages") or [])
    return parts


class PrefixCache:
    """The entries one fake server holds (thread-safe: the server answers on many threads)."""

    def __init__(self, min_tokens: int | None = None):
        # Anthropic's minimum cacheable prefix for every model, or None: each model's own
        self.min_tokens = min_tokens
        self._entries: dict[str, float] = {}  # prefix hash -> expiry (monotonic)
        self._lock = threading.Lock()

    def _live(self, key: str, now: float) -> bool:
        return self._entries.get(key, 0.0) > now

    def anthropic(self, body: dict[str, Any]) -> tuple[CacheUse, list[tuple[str, float]]]:
        """What a Messages request reads and would write; the entries to add once answered.
        TooManyBreakpoints when it carries more than the API takes."""
        items = _items(anthropic_parts(body), tool_use_tokens(body))
        marks = [i for i, item in enumerate(items) if item.ttl is not None]
        if len(marks) > MAX_BREAKPOINTS:
            raise TooManyBreakpoints(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(marks)}."
            )
        now = time.monotonic()
        read, entries = 0, []
        with self._lock:
            for mark in marks:
                for j in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1):
                    if self._live(items[j].key, now):  # a read refreshes the entry's TTL
                        read = max(read, items[j].total)
                        entries.append((items[j].key, _TTL["5m"]))
                        break
        writes = {"5m": 0, "1h": 0}
        done = read
        least = self.min_tokens or anthropic_min_tokens(str(body.get("model") or ""))
        for mark in marks:
            item = items[mark]
            if item.total < least:
                continue  # too short to cache: sent as plain input, no error
            ttl = item.ttl if item.ttl in _TTL else "5m"
            entries.append((item.key, _TTL[ttl]))
            if item.total > done:
                writes[ttl] += item.total - done
                done = item.total
        prompt = items[-1].total if items else 0
        return CacheUse(prompt, read, writes["5m"], writes["1h"]), entries

    def openai(
        self, body: dict[str, Any], protocol: str
    ) -> tuple[CacheUse, list[tuple[str, float]]]:
        """The cached prefix of a Chat Completions or Responses request, and its entries."""
        items = _items(openai_parts(body, protocol))
        now = time.monotonic()
        with self._lock:
            hit = max((i.total for i in items if self._live(i.key, now)), default=0)
        read = 0 if hit < OPENAI_MIN_TOKENS else hit - hit % OPENAI_STEP_TOKENS
        entries = [(i.key, _TTL["5m"]) for i in items if i.total >= OPENAI_MIN_TOKENS]
        return CacheUse(items[-1].total if items else 0, read), entries

    def keep(self, entries: list[tuple[str, float]]) -> None:
        """Add the entries of an answered request (a read refreshes an entry's TTL too)."""
        now = time.monotonic()
        with self._lock:
            for key, ttl in entries:
                self._entries[key] = max(self._entries.get(key, 0.0), now + ttl)
