"""The run journal: one JSON line per finished session and row, fsynced as it is written, so
a crash or Ctrl-C loses nothing and `--resume` knows exactly what is done. One process at a
time holds a run folder (an exclusive lock on its journal)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import msgspec

import skillbench.util.lossless as lossless
from skillbench.errors import SkillbenchError
from skillbench.results.records import Record, RowRecord, SessionRecord
from skillbench.util.scrub import IDENTIFIERS, scrub_obj


class RunBusy(SkillbenchError):
    """Another process holds the run folder."""


class Journal:
    """Append-only, fsynced per line, locked for as long as it is open."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise RunBusy(
                f"{path.parent}: another skillbench process is running this run "
                "folder; wait for it to finish, or stop it first"
            ) from None
        self._repair_tail()

    def _repair_tail(self) -> None:
        """Cut a last line torn by a crash mid-write, so the next record starts a line of its
        own instead of being glued onto the torn one (and lost)."""
        size = os.fstat(self._fd).st_size
        if size == 0 or os.pread(self._fd, 1, size - 1) == b"\n":
            return
        keep, pos = 0, size
        while pos > 0 and not keep:
            start = max(0, pos - 65536)
            block = os.pread(self._fd, pos - start, start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
            pos = start
        os.ftruncate(self._fd, keep)
        os.fsync(self._fd)

    def append(self, record: Record) -> None:
        plain = scrub_obj(msgspec.to_builtins(record), keep=IDENTIFIERS)
        os.write(self._fd, lossless.dumps(plain) + b"\n")
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
            record: Record = lossless.loads(line, Record)
        except msgspec.DecodeError:
            continue  # a line torn by a crash mid-write
        if isinstance(record, SessionRecord):
            sessions[record.key] = record
        else:
            rows[(record.case, record.rep, record.opponent)] = record
    return sessions, rows
