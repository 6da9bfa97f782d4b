"""Bounded reading of JSON and TOML inputs (docs/trust.md): receipts, team-repo files, config.

Each reads a regular file only (a link to /dev/zero or a FIFO is refused, never read
forever), at most a cap of bytes, and turns every way the input can be wrong (unreadable,
too large, not UTF-8, not valid, nested past the parser's recursion limit, the wrong shape)
into one `InputError` that names the file. YAML assets have their own reader with line
numbers (evals/yamlsrc.py).
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any, TypeVar

import msgspec

MAX_JSON = 64 << 20  # a receipt of a long run is a few MiB
MAX_TOML = 1 << 20

T = TypeVar("T")


class InputError(msgspec.DecodeError):
    """An input file that cannot be taken; the message is one line naming it. A DecodeError,
    so whatever passes over an undecodable receipt passes over this one too."""


def read_capped(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at `path` (links followed), refused past `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # opening a FIFO must not wait
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{path}: not a regular file; refusing to read it")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{path}: larger than {_size(limit)}; refusing to read it")
    return data


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"


def load_json(path: Path, shape: type[T], *, limit: int = MAX_JSON) -> T:
    """The JSON document at `path` as `shape` (a msgspec type, or `Any`)."""
    data = read_capped(path, limit)
    try:
        return msgspec.json.decode(data, type=shape)
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to read") from None
    except msgspec.DecodeError as exc:
        raise InputError(f"{path}: not valid JSON of the expected shape: {exc}") from None


def load_toml(path: Path, *, limit: int = MAX_TOML) -> dict[str, Any]:
    """The TOML document at `path`."""
    data = read_capped(path, limit)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 (byte {exc.start}); save it as UTF-8") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to read") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None
