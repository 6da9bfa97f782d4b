"""RJ1 (BROKEN, low): a journal line of deeply nested OBJECTS is a RecursionError traceback
out of read_journal (so `skillbench report RUN`, `view`, `eval --resume` on a hostile or
corrupted run folder).

tests/test_robust.py covers 100k nested ARRAYS (`[[[...]]]`), which msgspec rejects as a
DecodeError; 100k nested objects (`{"a":{"a":...}}`), or a nested value inside a record,
make msgspec.json.decode raise RecursionError, which lossless.loads' fast path does not catch
(only the stdlib fallback catches it) and read_journal catches only DecodeError.

Expected: the line is skipped like any other unreadable line (or one line naming the file).
Observed: RecursionError: maximum recursion depth exceeded while deserializing an object.
Same class, not reproduced here: skillbench/engine/reuse.py:121 (entry.json of the session
cache catches only OSError/DecodeError) and skillbench/tune/rounds.py:168 (a tune run folder's
round files, `tune --resume`).
Fix: catch RecursionError in lossless.loads' msgspec path (and in those two readers).
"""

from __future__ import annotations

from pathlib import Path

from skillbench.engine.journal import read_journal

NESTED = '{"a":' * 100_000 + "1" + "}" * 100_000
LINE = b'{"type": "session", "key": "a.candidate.1", "session": "a", "arm": "candidate", '
LINE += b'"rep": 1, "outcome": "pass"}\n'


def test_nested_objects_in_a_journal_never_raise(tmp_path: Path) -> None:
    inside = '{"type": "session", "x": ' + NESTED + "}"
    (tmp_path / "journal.jsonl").write_bytes(
        NESTED.encode() + b"\n" + inside.encode() + b"\n" + LINE
    )
    sessions, _ = read_journal(tmp_path / "journal.jsonl")  # RecursionError
    assert list(sessions) == ["a.candidate.1"]
