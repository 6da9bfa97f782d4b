"""What a Ray task's returned files may name in the driver's run folder: only its own
session's transcript, exchanges, network log and workspace (and the snapshot it was given),
never another session's, which a hostile worker would otherwise overwrite."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.cluster.placement import ClusterError, _write

KEY = "c1.candidate.0"


@pytest.mark.parametrize(
    "rel",
    [
        "transcripts/c2.baseline.0.jsonl",  # another session's transcript
        "exchanges/c1.candidate.1.jsonl",  # another rep's
        "network/c1.baseline.0.jsonl",
        "workspaces/c2.candidate.0/answer.txt",
        "transcripts/c1.candidate.0.jsonl.bak",
        "transcripts/c1.candidate.0/x.jsonl",
        "../outside.jsonl",
        "summary.json",
    ],
)
def test_a_task_cannot_write_another_sessions_files(tmp_path: Path, rel: str) -> None:
    victim = tmp_path / "transcripts" / "c2.baseline.0.jsonl"
    victim.parent.mkdir()
    victim.write_text("the real transcript")
    with pytest.raises(ClusterError, match="not this session's"):
        _write(tmp_path, rel, b"forged", True, None, KEY)
    assert victim.read_text() == "the real transcript"


@pytest.mark.parametrize(
    "rel",
    [
        "transcripts/c1.candidate.0.jsonl",
        "transcripts/c1.candidate.0.attempt1.jsonl",
        "exchanges/c1.candidate.0.jsonl",
        "network/c1.candidate.0.jsonl",
        "workspaces/c1.candidate.0/sub/out.txt",
        "tmp/c1.candidate.0.tar",  # the snapshot it was sent
    ],
)
def test_a_task_writes_its_own_files(tmp_path: Path, rel: str) -> None:
    _write(tmp_path, rel, b"a", True, "tmp/c1.candidate.0.tar", KEY)
    _write(tmp_path, rel, b"b", False, "tmp/c1.candidate.0.tar", KEY)
    assert (tmp_path / rel).read_bytes() == b"ab"
