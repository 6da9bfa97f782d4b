"""Cost of model calls from a per-model price table (USD per million tokens).

Prices change; a user extends or overrides them in config:

    [prices."anthropic/claude-sonnet-4-5"]
    input = 3.0
    output = 15.0
    cache_read = 0.3
    cache_write = 3.75
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from skillbench.models.base import Usage


class Price(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    input: float
    output: float
    cache_read: float | None = None  # defaults to input / 10
    cache_write: float | None = None  # defaults to input * 1.25


# Matched by longest prefix of the model reference.
BUILTIN: dict[str, Price] = {
    # Only models whose price we know; anything else shows cost n/a until configured.
    "anthropic/claude-opus-4-5": Price(5.0, 25.0, 0.5, 6.25),
    "anthropic/claude-opus-4-1": Price(15.0, 75.0, 1.5, 18.75),
    "anthropic/claude-opus-4-2025": Price(15.0, 75.0, 1.5, 18.75),
    "anthropic/claude-sonnet-4": Price(3.0, 15.0, 0.3, 3.75),
    "anthropic/claude-haiku-4-5": Price(1.0, 5.0, 0.1, 1.25),
    "anthropic/claude-3-5-haiku": Price(0.8, 4.0, 0.08, 1.0),
    "openai/gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "openai/gpt-4.1": Price(2.0, 8.0, 0.5),
    "openai/gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "openai/gpt-4o": Price(2.5, 10.0, 1.25),
    "openai/gpt-5-mini": Price(0.25, 2.0, 0.025),
    "openai/gpt-5": Price(1.25, 10.0, 0.125),
    # Gemini API, standard tier, prompts up to 200k tokens (longer ones are billed at about
    # twice this); output includes thinking tokens; implicit caching has no write premium
    "google/gemini-3-pro": Price(2.0, 12.0, 0.2, 2.0),
    "google/gemini-3-flash": Price(0.5, 3.0, 0.05, 0.5),
    "google/gemini-2.5-pro": Price(1.25, 10.0, 0.125, 1.25),
    "google/gemini-2.5-flash-lite": Price(0.1, 0.4, 0.01, 0.1),
    "google/gemini-2.5-flash": Price(0.3, 2.5, 0.03, 0.3),
    "scripted/": Price(0.0, 0.0, 0.0, 0.0),
}


# USD a provider charges for one server-tool call (`usage.server_tool_use`) on top of tokens:
# a web search is $10 per thousand, the dearest listed; any other kind is counted the same
SERVER_TOOL_CALL_USD = 0.01


def price_for(ref: str, extra: Mapping[str, Price] | None = None) -> Price | None:
    """The price of a model reference, user prices first; None when unknown."""
    table = {**BUILTIN, **(extra or {})}
    if ref in table:
        return table[ref]
    matches = [key for key in table if ref.startswith(key)]
    return table[max(matches, key=len)] if matches else None


def cost_usd(ref: str, usage: Usage, extra: Mapping[str, Price] | None = None) -> float | None:
    """What `usage` cost on model `ref`, or None when the model has no known price."""
    price = price_for(ref, extra)
    if price is None:
        return None
    cache_read = price.input / 10 if price.cache_read is None else price.cache_read
    cache_write = price.input * 1.25 if price.cache_write is None else price.cache_write
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * cache_read
        + usage.cache_write_tokens * cache_write
    )
    return total / 1_000_000


def worst_case_usd(
    ref: str, input_tokens: int, output_tokens: int, extra: Mapping[str, Price] | None = None
) -> float | None:
    """The most a call could cost on model `ref`: every input token at the dearest input
    rate (a cache write costs more than plain input) and every output token it may produce;
    None when the model has no known price."""
    price = price_for(ref, extra)
    if price is None:
        return None
    dearest = max(
        price.input,
        price.input * 1.25 if price.cache_write is None else price.cache_write,
        price.input / 10 if price.cache_read is None else price.cache_read,
    )
    return (input_tokens * dearest + output_tokens * price.output) / 1_000_000
