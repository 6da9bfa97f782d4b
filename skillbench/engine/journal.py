"""The run journal: one JSON line per finished session and row, fsynced as it is written, so
a crash or Ctrl-C loses nothing and `--resume` knows exactly what is done."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from skillbench.engine.records import Record, RowRecord, SessionRecord
from skillbench.scrub import scrub_obj

_decoder = msgspec.json.Decoder(Record)


class Journal:
    """Append-only, fsynced per line."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append(self, record: Record) -> None:
        plain = scrub_obj(msgspec.to_builtins(record))
        os.write(self._fd, msgspec.json.encode(plain) + b"\n")
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


RowKey = tuple[str, int, str]


def read_journal(path: Path) -> tuple[dict[str, SessionRecord], dict[RowKey, RowRecord]]:
    """Sessions by key and rows by (unit, rep, opponent); a torn last line is ignored."""
    sessions: dict[str, SessionRecord] = {}
    rows: dict[RowKey, RowRecord] = {}
    if not path.exists():
        return sessions, rows
    for line in path.read_bytes().splitlines():
        try:
            record = _decoder.decode(line)
        except msgspec.DecodeError:
            continue  # a line torn by a crash mid-write
        if isinstance(record, SessionRecord):
            sessions[record.key] = record
        else:
            rows[(record.case, record.rep, record.opponent)] = record
    return sessions, rows
