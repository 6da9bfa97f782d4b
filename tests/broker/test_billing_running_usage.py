"""RT5-BB (redteam5, partial: depends on the OpenAI-style upstream). broker_wire.final_usage
takes any event with a top-level `usage` object for the provider's final count. A Chat
Completions request may ask for a usage object on every chunk
(`stream_options.continuous_usage_stats`, vLLM's and other OpenAI-compatible servers'; the
broker's _StreamOptions lets unknown fields through and forwards them). A stream the sandbox
then cuts after the first chunk is billed that chunk's running count, not its reservation.

Also: Head.max_output reads the first of max_tokens / max_output_tokens /
max_completion_tokens, so `{"max_tokens": 1, "max_completion_tokens": 100000}` reserves one
output token for a provider that honours the other name (and a cut call is billed that
reservation).

Fixed: a chunk that still has choices is a running count, never the final one.
"""

from __future__ import annotations

import json

from skillbench.broker.billing import bill
from skillbench.broker.limits import read_head
from skillbench.broker.wire import WIRES


def _chunk(obj: dict) -> str:
    return f"data: {json.dumps(obj)}\n\n"


def test_a_running_usage_chunk_is_taken_for_the_final_count() -> None:
    body = {
        "model": "gpt-5",
        "stream": True,
        "max_completion_tokens": 100000,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    head = read_head(json.dumps(body).encode())
    assert head.stream_options is not None and head.stream_options.include_usage
    cut = _chunk(
        {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": "Hel"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
        }
    )  # ... the sandbox hangs up here; the provider generated on
    reserved = 1.0
    billed = bill(WIRES["openai"], cut, "openai/gpt-5", reserved, None, ran=True)
    assert not billed.whole and billed.cost == reserved, billed
