"""Reading a JSON object out of a model's free-text reply (prose and code fences tolerated)."""

from __future__ import annotations

import json
import re
from typing import Any


class TooCostly(ValueError):
    """Reading the objects of a text would cost more than its length allows (_COST)."""


# the first window a value is read in; its errors count the lines before them, so read on
# the whole text, every "{" of a megabyte of them cost a pass over all that came before:
# minutes of the host's event loop
_WINDOW = 1 << 8
_LOOKAHEAD = 16  # characters a parse may need past where it fails (a literal, a number)
# characters read, over every "{" tried (each also costs _TRY: a failure's exception), per
# character of the text, and a floor: each "{" of `{"":{"":...` reads on to the parser's
# nesting limit, a thousand levels, before it fails. At most about 3 s at the 1 MiB output cap
_COST, _COST_FLOOR, _TRY = 32, 1 << 20, 128


def _decode_at(
    decoder: json.JSONDecoder, text: str, start: int, left: list[int]
) -> tuple[Any, int]:
    """decoder.raw_decode(text, start), read in a window that grows only while the parse
    reaches its end, so that what a failure costs is what it read; each window charged to
    `left`, past which TooCostly."""
    size = _WINDOW
    while True:
        window = text[start : start + size]
        read = len(window)
        try:
            value, end = decoder.raw_decode(window)
        except json.JSONDecodeError as exc:
            # (an unterminated string is reported where it starts, though read to the end)
            cut = exc.msg.startswith("Unterminated") or exc.pos >= len(window) - _LOOKAHEAD
            read = len(window) if cut else exc.pos
            if not cut or start + size >= len(text):
                raise
            size *= 4
            continue
        finally:
            left[0] -= _TRY + read
            if left[0] < 0:
                raise TooCostly(f"reading its JSON objects costs more than {_COST} passes over it")
        return value, start + end


class KeyTwice(ValueError):
    """A JSON object gives a key twice (`key`: the first such)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An `object_pairs_hook` that raises KeyTwice for a key given twice in one object."""
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise KeyTwice(next(k for k in keys if keys.count(k) > 1))
    return dict(pairs)


def has_key_twice(text: str) -> bool:
    """Whether an object in `text` that parses gives a key twice: a parser keeps only the last
    value, so a verdict under the first one (`{"x": {"pass": false}, "x": 0}`) is gone
    before anything can compare it."""
    try:
        json_objects(text, json.JSONDecoder(object_pairs_hook=once))
    except KeyTwice:
        return True
    return False


def json_objects(text: str, decoder: json.JSONDecoder | None = None) -> list[dict[str, Any]]:
    """Every top-level `{...}` in `text` that parses as a JSON object, in order (an object's
    nested objects are part of it, not listed again). Raises TooCostly for a text built to
    be slow to read."""
    decoder = decoder or json.JSONDecoder()
    found, start = [], text.find("{")
    left = [_COST * len(text) + _COST_FLOOR]
    while start != -1:
        try:
            value, end = _decode_at(decoder, text, start, left)
        except (KeyTwice, TooCostly):
            raise
        except (ValueError, RecursionError):  # (an object nested past the parser's limit)
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)
    return found


def every_object(text: str, decoder: json.JSONDecoder | None = None) -> list[dict[str, Any]]:
    """Every JSON object in `text` at any depth, in document order: an object another one
    wraps is listed too, after it."""
    found: list[dict[str, Any]] = []
    stack: list[object] = list(reversed(json_objects(text, decoder)))
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.append(node)
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return found


def unread(text: str, key: str, found: list[dict[str, Any]]) -> bool:
    """Whether `text` names `key` as a JSON key (in any spelling a parser reads as it,
    `"p\\u0061ss"` too) more often than the `found` objects carry it: an object naming it
    did not parse (bytes slipped into a verdict written in pieces)."""
    named = 0
    for token in _KEY.findall(text):
        try:
            named += json.loads(f'"{token}"', strict=False) == key
        except ValueError:
            continue
    return named > len(found)


# a string, then a colon, tried at every quote (overlapping): a backslash slipped in before a
# key's quote would otherwise make one long match that swallows the key; at most 64
# characters (no longer one decodes to a verdict's key, and an unbounded one tried at every
# quote costs the square of the output)
_KEY = re.compile(r'(?="((?:[^"\\]|\\.){0,64})"\s*:)', re.S)


def objects_carrying(text: str, key: str) -> list[dict[str, Any]]:
    """Every JSON object in `text` that has `key`, at any depth (output that opened an object
    before a verdict and closed it after would otherwise hide that verdict in its own)."""
    return [o for o in every_object(text) if key in o]
