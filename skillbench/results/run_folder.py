"""A finished run folder, read back for the renderers (report, view, compare): the plan, the
summary, the journal's session and row records, and the transcripts on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from skillbench.errors import SkillbenchError
from skillbench.results.journal import read_journal
from skillbench.results.records import Plan, RowRecord, SessionRecord
from skillbench.results.summary import Summary
from skillbench.util.inputs import load_json
from skillbench.util.lossless import shown


class RunFolderError(SkillbenchError):
    """Not a finished run folder (no summary.json or plan.json that can be read)."""


class RunFolder(msgspec.Struct):
    path: str
    plan: Plan
    summary: Summary
    sessions: dict[str, SessionRecord]
    rows: list[RowRecord]

    def transcript(self, record: SessionRecord) -> list[dict[str, Any]]:
        """A session's transcript events (the scrubbed copy on disk); [] when there is none."""
        if not record.transcript:
            return []
        try:
            text = (Path(self.path) / record.transcript).read_text(encoding="utf-8")
        except OSError:
            return []
        events = []
        for line in text.split("\n"):  # (never at U+2028 and the like: see json_line)
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):
                continue  # a torn last line (or one nested past the parser's limit)
            if isinstance(event, dict):
                events.append(event)
        return events


def load_run(path: Path) -> RunFolder:
    """Read a run folder; RunFolderError names what is missing and what to do."""
    if not path.is_dir():
        raise RunFolderError(f"{path}: no such run folder")
    try:
        plan = load_json(path / "plan.json", Plan)
    except (OSError, msgspec.DecodeError) as exc:
        raise RunFolderError(
            f"{path}: no readable plan.json ({exc}); is it a run folder?"
        ) from None
    try:
        summary = load_json(path / "summary.json", Summary)
    except (OSError, msgspec.DecodeError):
        raise RunFolderError(
            f"{path}: the run has no summary.json yet (it did not "
            f"finish); finish it with `skillbench eval --resume {path}`"
        ) from None
    sessions, rows = read_journal(path / "journal.jsonl")
    # the journal keeps a sandbox's file names byte for byte; a report shows odd bytes as \xNN
    return RunFolder(
        str(path),
        plan,
        summary,
        {k: shown(r) for k, r in sessions.items()},
        [shown(r) for r in rows.values()],
    )
