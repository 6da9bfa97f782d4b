"""Reading a JSON object out of a model's free-text reply (prose and code fences tolerated)."""

from __future__ import annotations

import json
from typing import Any


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first `{...}` in `text` that parses as a JSON object, or None."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None
