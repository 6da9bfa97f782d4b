"""Nothing a candidate writes can abort or confuse a run: sandbox file names that are not
UTF-8 journal losslessly, session keys are never scrubbed into collisions, and run-folder and
skill inputs that are hostile give one line naming the file, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.evals.kinds.scripts import reward_metrics
from skillbench.evals.problems import SpecError
from skillbench.evals.skills import digest
from skillbench.results.journal import Journal, read_journal
from skillbench.results.records import SessionRecord
from skillbench.results.transcript import read_trace
from skillbench.tune.splits import near_key, split_triggers
from tests.helpers import BASE, CAND, bash, conv, make_skill, run_eval, skill, write_file

sandboxed = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]


def test_journal_keeps_non_utf8_names_losslessly(tmp_path: Path) -> None:
    name = b"bad\xff\xfe-name.txt".decode("utf-8", "surrogateescape")
    record = SessionRecord(
        key="a.candidate.1",
        session="a",
        arm="candidate",
        rep=1,
        outcome="fail",
        notes=[f"workspace: left out {name}"],
    )
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append(record)
    journal.close()
    sessions, _ = read_journal(tmp_path / "journal.jsonl")
    assert sessions["a.candidate.1"].notes == [f"workspace: left out {name}"]
    assert sessions["a.candidate.1"].notes[0].encode("utf-8", "surrogateescape") == (
        b"workspace: left out bad\xff\xfe-name.txt"
    )


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_failing_candidate_leaving_non_utf8_names_cannot_abort_the_run(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(
        tmp_path,
        {"evals/cases/names.yaml": "task: Odd names\nchecks: [{file_exists: g.txt}]\n"},
    )
    odd = r"""cd /work && for i in 1 2 3; do touch "$(printf 'odd\377\376-%s' $i)"; done; """
    odd += r"""mkdir "$(printf 'dir\377')" && echo x > "$(printf 'dir\377/f\376')"; """
    # a link out of the workspace is cut at the handover, and named in the session's notes
    odd += r"""ln -s "$(printf '/etc/\377')" "$(printf 'link\377')"; ls"""
    fake(
        {
            "conversations": [
                conv(CAND, "Odd names", bash(odd), {"text": "done"}),
                conv(BASE, "Odd names", write_file("g.txt", "hi"), {"text": "done"}),
            ]
        }
    )
    code, _, summary = run_eval(capsys, folder, tmp_path / "run")
    assert [r["outcome"] for r in summary["rows"]] == ["loss"]
    assert (tmp_path / "run/receipt.json").is_file()
    sessions, _ = read_journal(tmp_path / "run/journal.jsonl")
    link = b"link\xff".decode("utf-8", "surrogateescape")
    assert any(link in note for note in sessions["names.candidate.1"].notes)
    kept = tmp_path / "run/workspaces/names.candidate.1"
    assert (kept / b"odd\xff\xfe-1".decode("utf-8", "surrogateescape")).exists()
    # --resume reads the journal back identically and has nothing left to run
    before = (tmp_path / "run/journal.jsonl").read_bytes()
    assert main(["eval", "--resume", str(tmp_path / "run"), "--quiet", "--no-gen"]) == code
    assert (tmp_path / "run/journal.jsonl").read_bytes() == before


def test_session_keys_are_never_scrubbed_but_their_values_are(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    for arm in ("baseline", "candidate"):
        key = f"token=abcdefgh12.{arm}.1"
        journal.append(
            SessionRecord(
                key=key,
                session="token=abcdefgh12",
                arm=arm,
                rep=1,
                outcome="fail",
                transcript=f"transcripts/{key}.jsonl",
                error="leaked token=abcdefgh12345",
            )
        )
    journal.close()
    sessions, _ = read_journal(tmp_path / "journal.jsonl")
    assert sorted(sessions) == ["token=abcdefgh12.baseline.1", "token=abcdefgh12.candidate.1"]
    assert {r.transcript for r in sessions.values()} == {
        "transcripts/token=abcdefgh12.baseline.1.jsonl",
        "transcripts/token=abcdefgh12.candidate.1.jsonl",
    }
    assert {r.error for r in sessions.values()} == {"leaked token=[REDACTED]"}


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_case_named_like_a_secret_keeps_its_arms_apart_and_resumes(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/token=abcdefgh12.yaml": "task: Secret name\nchecks: [{file_exists: g.txt}]\n"
        },
    )
    fake(
        {
            "conversations": [
                conv(CAND, "Secret name", write_file("g.txt", "hi"), {"text": "done"}),
                conv(BASE, "Secret name", {"text": "no"}),
            ]
        }
    )
    code, _, summary = run_eval(capsys, folder, tmp_path / "run")
    assert [(r["case"], r["outcome"]) for r in summary["rows"]] == [("token=abcdefgh12", "win")]
    sessions, _ = read_journal(tmp_path / "run/journal.jsonl")
    assert sorted(sessions) == ["token=abcdefgh12.baseline.1", "token=abcdefgh12.candidate.1"]
    before = (tmp_path / "run/journal.jsonl").read_bytes()
    assert main(["eval", "--resume", str(tmp_path / "run"), "--quiet", "--no-gen"]) == code
    assert (tmp_path / "run/journal.jsonl").read_bytes() == before  # nothing ran again


NFC, NFD = "caf\u00e9.md", "cafe\u0301.md"


def test_nfc_and_nfd_names_swapped_between_trees_never_share_a_digest(tmp_path: Path) -> None:
    one = make_skill(tmp_path / "a", "s", {NFC: "first", NFD: "second"})
    two = make_skill(tmp_path / "b", "s", {NFC: "second", NFD: "first"})
    for tree in (one, two):
        with pytest.raises(SpecError, match="once Unicode-normalised"):
            digest(tree)
    # one spelling alone is the same skill on macOS (NFD) and Linux (NFC)
    assert digest(make_skill(tmp_path / "c", "s", {NFC: "x"})) == digest(
        make_skill(tmp_path / "d", "s", {NFD: "x"})
    )


@pytest.mark.parametrize("command", ["digest", "check"])
def test_a_skill_file_name_that_is_not_utf8_is_one_line(tmp_path: Path, capsys, command) -> None:
    folder = make_skill(tmp_path, "s")
    (Path(os.fsdecode(bytes(folder) + b"/bad\xff"))).write_text("x")
    code = main([command, str(folder)])
    captured = capsys.readouterr()
    said = (captured.err + captured.out).strip()
    assert code != 0
    assert said.splitlines()[0].endswith(
        f"{folder}/bad\\xff:1: error: file name is not UTF-8; rename it (a skill's names must be text)"
    )
    assert "Traceback" not in said


DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deeply_nested_plan_json_on_resume_is_one_line(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for plan in (DEEP, '{"skill_dir": "x", "other": ' + DEEP + "}", '{"skill_dir": ' + DEEP + "}"):
        (run / "plan.json").write_text(plan)
        assert main(["eval", "--resume", str(run)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"skillbench: error: --resume {run}: no readable plan.json there")
        assert len(err.splitlines()) == 1 and str(run / "plan.json") in err


def test_run_folder_files_nested_or_not_utf8_never_raise(tmp_path: Path) -> None:
    line = b'{"type": "session", "key": "a.candidate.1", "session": "a", "arm": "candidate", '
    line += b'"rep": 1, "outcome": "pass"}\n'
    (tmp_path / "journal.jsonl").write_bytes(
        DEEP.encode() + b"\n" + b'{"key": "\\udcff' + DEEP.encode() + b'"}\n\xff\xfe\n' + line
    )
    sessions, rows = read_journal(tmp_path / "journal.jsonl")
    assert (list(sessions), rows) == (["a.candidate.1"], {})
    trace = tmp_path / "trace.jsonl"
    trace.write_bytes(b'{"type": "text", "text": "a\xff"}\n' + DEEP.encode() + b'\n{"type": "x"}\n')
    assert [e["type"] for e in read_trace(trace).events] == ["text", "x"]
    assert reward_metrics('{"reward": ' + DEEP + "}") == {}


def test_near_duplicate_trigger_prompts_stay_in_one_split(tmp_path: Path) -> None:
    base = [f"please format report number {i} as a table" for i in range(12)]
    variants = [p.upper() + "!!" for p in base] + ["  " + p.replace(" ", "   ") + "?" for p in base]
    others = [f"what is the weather in city {i}" for i in range(12)]
    folder = make_skill(tmp_path, "s")
    (folder / "evals").mkdir()
    (folder / "evals/triggers.yaml").write_text(
        json.dumps({"should_trigger": base + variants, "should_not_trigger": others})
    )
    for seed in range(5):
        split, _ = split_triggers(folder, (0.5, 0.25, 0.25), seed)
        home = {}
        for name in ("train", "validation", "test"):
            for prompt in getattr(split, name).should_trigger:
                assert home.setdefault(near_key(prompt), name) == name, prompt


def test_unscored_rows_are_not_ties_and_old_tie_receipts_derive_the_same() -> None:
    from skillbench.results.records import RowRecord
    from skillbench.results.rows import compare

    def row(case: str, outcome: str, decided_by: str) -> RowRecord:
        return RowRecord(
            case=case, rep=1, opponent="baseline", outcome=outcome, decided_by=decided_by, arms={}
        )

    new = [row("a", "win", "checks"), row("b", "unscored", "environment-gap")]
    old = [row("a", "win", "checks"), row("b", "tie", "environment-gap")]  # receipts before
    assert compare(new, "baseline") == compare(old, "baseline")
    assert compare(new, "baseline").tie == 0
