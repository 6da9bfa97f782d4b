"""Cost of model calls from a per-model price table (USD per million tokens).

Prices change; a user extends or overrides them in config:

    [prices."anthropic/claude-sonnet-4-5"]
    input = 3.0
    output = 15.0
    cache_read = 0.3
    cache_write = 3.75      # a 5-minute cache write
    cache_write_1h = 6.0    # a 1-hour cache write

Anthropic bills a cache read at 0.1x input and a write at 1.25x (5 minutes) or 2x (an hour);
OpenAI caches automatically and bills a cached token at 0.1x (GPT-5), 0.25x (GPT-4.1) or
0.5x (GPT-4o) input, with no charge to write; Gemini caches implicitly, a read at 0.1x input
and no charge to write.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TypeVar

import msgspec

from skillbench.models.base import Usage


class Price(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    input: float
    output: float
    cache_read: float | None = None  # defaults to input / 10
    cache_write: float | None = None  # defaults to input * 1.25
    cache_write_1h: float | None = None  # defaults to input * 2

    def __post_init__(self) -> None:
        # a NaN compares false with every ceiling and a negative price spends money back:
        # either would let --max-cost run unbounded
        for rate in (
            self.input,
            self.output,
            self.cache_read,
            self.cache_write,
            self.cache_write_1h,
        ):
            if rate is not None and not (math.isfinite(rate) and rate >= 0):
                raise ValueError(
                    f"a price is a number of USD per million tokens, 0 or more, got {rate}"
                )


# Matched by the model reference's exact name or a dated snapshot of it (`_SNAPSHOT`); a key
# ending in "/" prices a whole provider. Not by prefix: gpt-5-pro costs 12x gpt-5 and
# gemini-2.5-flash-image bills image output, so a longer name is a model of its own, unpriced
# until configured, and --max-cost refuses it rather than count it at a neighbour's rate.
BUILTIN: dict[str, Price] = {
    # Only models whose price we know; anything else shows cost n/a until configured.
    # (OpenAI writes its cache at no charge: a write is priced as plain input.)
    "anthropic/claude-opus-4-6": Price(5.0, 25.0, 0.5, 6.25, 10.0),
    "anthropic/claude-opus-4-5": Price(5.0, 25.0, 0.5, 6.25, 10.0),
    "anthropic/claude-opus-4-1": Price(15.0, 75.0, 1.5, 18.75, 30.0),
    "anthropic/claude-opus-4-0": Price(15.0, 75.0, 1.5, 18.75, 30.0),
    "anthropic/claude-opus-4": Price(15.0, 75.0, 1.5, 18.75, 30.0),
    "anthropic/claude-sonnet-4-6": Price(3.0, 15.0, 0.3, 3.75, 6.0),
    "anthropic/claude-sonnet-4-5": Price(3.0, 15.0, 0.3, 3.75, 6.0),
    "anthropic/claude-sonnet-4-0": Price(3.0, 15.0, 0.3, 3.75, 6.0),
    "anthropic/claude-sonnet-4": Price(3.0, 15.0, 0.3, 3.75, 6.0),
    "anthropic/claude-haiku-4-5": Price(1.0, 5.0, 0.1, 1.25, 2.0),
    "anthropic/claude-3-5-haiku": Price(0.8, 4.0, 0.08, 1.0, 1.6),
    "openai/gpt-4.1-mini": Price(0.4, 1.6, 0.1, 0.4, 0.4),
    "openai/gpt-4.1": Price(2.0, 8.0, 0.5, 2.0, 2.0),
    "openai/gpt-4o-mini": Price(0.15, 0.6, 0.075, 0.15, 0.15),
    "openai/gpt-4o": Price(2.5, 10.0, 1.25, 2.5, 2.5),
    "openai/gpt-4o-2024-05-13": Price(5.0, 15.0, 5.0, 5.0, 5.0),  # its first snapshot, no cache
    "openai/gpt-5-mini": Price(0.25, 2.0, 0.025, 0.25, 0.25),
    "openai/gpt-5.1": Price(1.25, 10.0, 0.125, 1.25, 1.25),
    "openai/gpt-5": Price(1.25, 10.0, 0.125, 1.25, 1.25),
    # Gemini API, standard tier (a prompt over 200k tokens: LONG_CONTEXT); output includes
    # thinking tokens; implicit caching has no write premium (a write is priced as input)
    "google/gemini-3-pro": Price(2.0, 12.0, 0.2, 2.0, 2.0),
    "google/gemini-3-pro-preview": Price(2.0, 12.0, 0.2, 2.0, 2.0),
    "google/gemini-3-flash": Price(0.5, 3.0, 0.05, 0.5, 0.5),
    "google/gemini-3-flash-preview": Price(0.5, 3.0, 0.05, 0.5, 0.5),
    "google/gemini-2.5-pro": Price(1.25, 10.0, 0.125, 1.25, 1.25),
    "google/gemini-2.5-flash-lite": Price(0.1, 0.4, 0.01, 0.1, 0.1),
    "google/gemini-2.5-flash": Price(0.3, 2.5, 0.03, 0.3, 0.3),
    "scripted/": Price(0.0, 0.0, 0.0, 0.0),
}


# USD a provider charges for one server-tool call (`usage.server_tool_use`) on top of tokens:
# a web search is $10 per thousand, the dearest listed; any other kind is counted the same
SERVER_TOOL_CALL_USD = 0.01

# The system prompt a provider adds to a request that carries tools, billed as input that no
# byte of the request stands for: Anthropic's is 346 tokens for `tool_choice` auto or none and
# 313 for any or a named tool (its Claude 4 models; docs, "Tool use pricing and tokens").
# A reservation adds the largest to any request with tools (the other providers document
# none, and format their tools in fewer tokens than their bytes).
TOOL_USE_TOKENS = {"auto": 346, "none": 346, "any": 313, "tool": 313}
TOOL_PROMPT_TOKENS = max(TOOL_USE_TOKENS.values())


# What a provider appends to a model's name for a pinned snapshot or an alias of it, billed
# as the model: claude-sonnet-4-5-20250929, gpt-4.1-2025-04-14, claude-3-5-haiku-latest,
# gemini-2.0-flash-001
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest|\d{3})")


T = TypeVar("T")


def _entry(ref: str, table: Mapping[str, T]) -> T | None:
    """`ref`'s entry in `table`: its own name, else the longest key it is a snapshot of or a
    provider key ("scripted/") it falls under."""
    if ref in table:
        return table[ref]
    for key in sorted(table, key=len, reverse=True):
        if ref.startswith(key) and (key.endswith("/") or _SNAPSHOT.fullmatch(ref[len(key) :])):
            return table[key]
    return None


def price_for(ref: str, extra: Mapping[str, Price] | None = None) -> Price | None:
    """The price of a model reference, user prices first; None when unknown."""
    return _entry(ref, {**BUILTIN, **(extra or {})})


def cost_usd(ref: str, usage: Usage, extra: Mapping[str, Price] | None = None) -> float | None:
    """What `usage` cost on model `ref`, or None when the model has no known price."""
    price = price_for(ref, extra)
    if price is None:
        return None
    price = long_context(ref, price, _input_tokens(usage))
    read, write, write_1h = _cache_rates(price)
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * read
        + usage.cache_write_tokens * write
        + usage.cache_write_1h_tokens * write_1h
    )
    return total / 1_000_000


def rates(price: Price) -> tuple[float, ...]:
    """Every rate a call may be billed at: input, output, cache read, cache writes."""
    return (price.input, price.output, *_cache_rates(price))


def _cache_rates(price: Price) -> tuple[float, float, float]:
    """USD per million tokens read from the cache, written for 5 minutes, for an hour."""
    return (
        price.input / 10 if price.cache_read is None else price.cache_read,
        price.input * 1.25 if price.cache_write is None else price.cache_write,
        price.input * 2 if price.cache_write_1h is None else price.cache_write_1h,
    )


def worst_case_usd(
    ref: str, input_tokens: int, output_tokens: int, extra: Mapping[str, Price] | None = None
) -> float | None:
    """The most a call could cost on model `ref`: every input token at the dearest input
    rate (an hour's cache write costs the most) and every output token it may produce;
    None when the model has no known price."""
    price = price_for(ref, extra)
    if price is None:
        return None
    price = long_context(ref, price, input_tokens)
    dearest = max(price.input, *_cache_rates(price))
    return (input_tokens * dearest + output_tokens * price.output) / 1_000_000


# --- long-context rates ---------------------------------------------------------------------

# Anthropic's long-context pricing: Claude Sonnet 4 and 4.5 with the 1M-token context window
# (beta `context-1m-2025-08-07`) bill a call whose input passes 200k tokens (uncached, cache
# reads and cache writes together) at 2x every input rate and 1.5x output, for all its tokens
# ($6 / $22.50 per Mtok for $3 / $15); a call under 200k is billed at the base rates. Sonnet
# 4.6 and Opus 4.6 serve their 1M window at the base rates.
LONG_CONTEXT: dict[str, tuple[int, float, float]] = {  # model -> (over, input x, output x)
    "anthropic/claude-sonnet-4-5": (200_000, 2.0, 1.5),
    "anthropic/claude-sonnet-4-0": (200_000, 2.0, 1.5),
    "anthropic/claude-sonnet-4": (200_000, 2.0, 1.5),
    # Gemini 2.5 Pro: a prompt over 200k tokens (cached ones included) at $2.50 input, $0.25
    # a cache read and $15 output per Mtok for all its tokens
    "google/gemini-2.5-pro": (200_000, 2.0, 1.5),
    # Gemini 3 Pro: $4 input and $18 output per Mtok over 200k ($2 / $12 under)
    "google/gemini-3-pro": (200_000, 2.0, 1.5),
    "google/gemini-3-pro-preview": (200_000, 2.0, 1.5),
}


def long_context(ref: str, price: Price, input_tokens: int) -> Price:
    """`price`, at its long-context rates when a call's input passes the model's threshold
    (every rate but output is an input rate; an unset cache rate follows input)."""
    tier = _entry(ref, LONG_CONTEXT)
    if tier is None or input_tokens <= tier[0]:
        return price
    _, per_input, per_output = tier
    rates = {f: getattr(price, f) for f in price.__struct_fields__}
    return msgspec.structs.replace(
        price,
        **{f: v * (per_output if f == "output" else per_input) for f, v in rates.items() if v},
    )


def _input_tokens(usage: Usage) -> int:
    """Every input token of a call, cached or not (each count but the output is input)."""
    return sum(getattr(usage, f) for f in usage.__struct_fields__ if f != "output_tokens")
