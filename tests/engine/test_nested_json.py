"""Deeply nested JSON OBJECTS in a run folder, the session cache or a tune folder: msgspec
stops nested arrays itself but raises RecursionError on objects (redteam4 RJ1); lossless.loads,
which all three readers use, turns it into the DecodeError each already handles."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.engine.reuse import SessionCache
from skillbench.results.journal import read_journal
from skillbench.tune.rounds import TuneError, saved_rounds

NESTED = '{"a":' * 100_000 + "1" + "}" * 100_000
LINE = b'{"type": "session", "key": "a.candidate.1", "session": "a", "arm": "candidate", '
LINE += b'"rep": 1, "outcome": "pass"}\n'


def test_nested_objects_in_a_journal_never_raise(tmp_path: Path) -> None:
    inside = '{"type": "session", "x": ' + NESTED + "}"
    (tmp_path / "journal.jsonl").write_bytes(
        NESTED.encode() + b"\n" + inside.encode() + b"\n" + LINE
    )
    sessions, _ = read_journal(tmp_path / "journal.jsonl")
    assert list(sessions) == ["a.candidate.1"]


def test_nested_objects_in_a_cache_entry_are_a_miss(tmp_path: Path) -> None:
    cache = SessionCache(tmp_path)
    folder = tmp_path / "ab" / "abcdef"
    folder.mkdir(parents=True)
    (folder / "entry.json").write_text(NESTED)
    (folder / "workspace.tar").write_bytes(b"")
    assert cache.get("abcdef") is None


def test_nested_objects_in_a_tune_round_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "rounds").mkdir()
    (tmp_path / "rounds" / "00.json").write_text(NESTED)
    with pytest.raises(TuneError, match=r"00\.json: unreadable \(nested too deeply to read\)"):
        saved_rounds(tmp_path)
