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


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level `{...}` in `text` that parses as a JSON object, in order (an object's
    nested objects are part of it, not listed again)."""
    decoder = json.JSONDecoder()
    found, start = [], text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # (an object nested past the parser's limit)
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)
    return found


def every_object(text: str) -> list[dict[str, Any]]:
    """Every JSON object in `text` at any depth, in document order: an object another one
    wraps is listed too, after it."""
    found: list[dict[str, Any]] = []
    stack: list[object] = list(reversed(json_objects(text)))
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.append(node)
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return found


def objects_carrying(text: str, key: str) -> list[dict[str, Any]]:
    """Every JSON object in `text` that has `key`, at any depth (output that opened an object
    before a verdict and closed it after would otherwise hide that verdict in its own)."""
    return [o for o in every_object(text) if key in o]
