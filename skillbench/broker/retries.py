"""A request's failed tries, for a CLI whose own retries only the broker can cap (OpenCode
retries a failed call about a hundred times, each billed its reservation).

A retry asks the same question, but not always in the same body: after a stream cut
mid-answer OpenCode keeps the partial answer and asks again with it appended to its last
turn. So tries are counted per question: the request without the answer it already holds
(its trailing assistant turns) and without cache breakpoints (a CLI moves them to its newest
turn). Counting failures "in a row" across all calls instead would let the agent, which holds
the session's key, use up the CLI's tries with failing calls of its own.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

KEPT = 256  # questions whose failed tries are remembered (a CLI retries its newest)
# where each wire keeps the conversation: Anthropic and chat `messages`, Responses `input`,
# Gemini `contents`; and what each calls the model's own turns
_TURNS = ("messages", "input", "contents")
_ANSWERS = ("assistant", "model")


def question(body: bytes) -> bytes:
    """A digest of what the request asks (equal for a retry of it)."""
    try:
        parsed = json.loads(body)
        field = next((f for f in _TURNS if isinstance(parsed.get(f), list)), None)
        if field is not None:
            turns = parsed[field]
            while turns and isinstance(turns[-1], dict) and turns[-1].get("role") in _ANSWERS:
                turns.pop()
        return hashlib.sha256(_canonical(parsed)).digest()
    except (ValueError, RecursionError, AttributeError):  # not a JSON object, or too deep
        return hashlib.sha256(body).digest()


def _canonical(value: Any) -> bytes:
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":")).encode()


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Tries:
    """The failed tries of each question (not thread-safe: the broker's lock guards it)."""

    def __init__(self, kept: int = KEPT):
        self._kept = kept
        self._failed: dict[bytes, int] = {}

    def of(self, asked: bytes) -> int:
        return self._failed.get(asked, 0)

    def ended(self, asked: bytes, failed: bool) -> None:
        """A try ended: failed, or answered (the question is done with)."""
        tries = self._failed.pop(asked, 0) + 1
        if failed:
            self._failed[asked] = tries
            if len(self._failed) > self._kept:  # the longest-untried goes first
                del self._failed[next(iter(self._failed))]
