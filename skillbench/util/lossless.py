"""JSON that keeps what a sandbox wrote, byte for byte.

A file name from a sandbox need not be UTF-8: it arrives decoded with `surrogateescape`, so
its odd bytes are lone surrogates (U+DC80..U+DCFF), which msgspec refuses to encode (the run
died at its journal) and to decode. Such a value is written with JSON's own `\\uDCxx` escapes
(stdlib `json`, ASCII only) and read back by the stdlib parser, so the journal and the session
cache return the exact string, whose `surrogateescape` encoding is the original bytes. Every
other value takes msgspec's fast path. Documents meant for people and the gate (summary.json,
the receipt) take `utf8_safe`, which shows such bytes as `\\xNN` instead.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def dumps(value: Any) -> bytes:
    """`value` (a msgspec type or plain data) as one line of JSON, lone surrogates kept."""
    try:
        return msgspec.json.encode(value)
    except UnicodeEncodeError:
        return json.dumps(msgspec.to_builtins(value), ensure_ascii=True).encode("ascii")


def loads(data: bytes, shape: Any) -> Any:
    """What `dumps` wrote, as `shape` (a msgspec type or union); a msgspec.DecodeError
    (or ValidationError) if it is not that, nested too deeply included, so every reader of a
    run folder, the session cache or a tune folder skips or refuses it in one place."""
    try:
        return msgspec.json.decode(data, type=shape)
    except RecursionError:  # msgspec's own depth limit stops arrays, not objects
        raise msgspec.DecodeError("nested too deeply to read") from None
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError:
        if b"\\ud" not in data.lower():  # only the escapes msgspec refuses take the slow path
            raise
    try:
        plain = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise msgspec.DecodeError(f"not valid JSON: {exc}") from None
    return msgspec.convert(plain, shape)


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def utf8_safe(value: Any) -> Any:
    """Plain data with every lone surrogate in its strings (and keys) shown as `\\xNN`."""
    if isinstance(value, str):
        return _SURROGATE.sub(_shown, value)
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [utf8_safe(v) for v in value]
    return value


def shown(value: T) -> T:
    """A msgspec struct with its strings made `utf8_safe`: for what is rendered or printed."""
    return msgspec.convert(utf8_safe(msgspec.to_builtins(value)), type(value))
