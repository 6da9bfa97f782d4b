"""The typed Receipt (results/receipt.py) keeps the file on disk as it was: receipts written by
main's code before the types (tests/data/main_receipt, made by its make.py) read back as a
Receipt, re-encode to the same bytes, still verify and still gate; the same inputs written now
give the same bytes. And a receipt with a wrong type in any field is refused in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest

from skillbench.cli import main
from skillbench.results.receipt import Claimed, Receipt, Unchecked, parse
from skillbench.results.stats import Stats
from skillbench.team.gate import signed_receipt
from skillbench.team.receipts import encode, inconsistency, read_filed, store_dir
from skillbench.util.inputs import InputError
from tests.data.main_receipt.make import inputs, write

DATA = Path(__file__).parent.parent / "data" / "main_receipt"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.mark.parametrize("name", ["unsigned.json", "signed.json"])
def test_a_receipt_main_wrote_reads_as_a_receipt_and_encodes_to_its_own_bytes(name: str) -> None:
    data = (DATA / name).read_bytes()
    r = parse(data)
    assert isinstance(r, Receipt), getattr(r, "problem", None)
    assert inconsistency(r, now=None) is None
    assert encode(r) == data
    assert (r.signature is not None) == (name == "signed.json")


def test_the_same_inputs_written_now_give_mains_bytes(tmp_path: Path) -> None:
    assert write(tmp_path, None) == (DATA / "unsigned.json").read_bytes()


def test_a_receipt_main_signed_still_verifies_and_passes_the_gate(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(key, "tests@skillbench.invalid")
    found, principal = signed_receipt(str(DATA / "signed.json"), DATA / "allowed_signers")
    assert (principal, isinstance(found, Receipt)) == ("ci@team", True)
    skill = inputs(tmp_path)
    repo = tmp_path / "team"
    repo.mkdir()
    git(repo, "init", "-q")
    shutil.copytree(skill, repo / "skills/greeter/v1")
    (repo / "skills/greeter/versions.json").write_text(
        json.dumps({"v1": found.digest}, indent=2, sort_keys=True) + "\n"
    )
    (repo / "evals/greeter/v1").mkdir(parents=True)
    shutil.copy(DATA / "signed.json", repo / "evals/greeter/v1/run-main.json")
    (repo / ".skillbench").mkdir()
    shutil.copy(DATA / "allowed_signers", repo / ".skillbench/allowed_signers")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a receipt main signed")
    code = main(["gate", str(skill), "--team", str(repo), "--allow-partial"])
    out = capsys.readouterr().out.strip()
    assert (code, out) == (
        0,
        "gate passed: greeter: NEUTRAL (run run-main, 13/14 rows scored, signed by ci@team)",
    )


def test_claimed_stats_are_the_stats_fields_in_their_order() -> None:
    # the receipt's stats encode as summary.json's do: same keys, same order
    assert Claimed.__struct_fields__ == Stats.__struct_fields__


def _wrong(value: Any) -> list[Any]:
    """Values of a type other than `value`'s."""
    if isinstance(value, bool):
        return ["yes", 1.5]
    if isinstance(value, int | float):
        return ["1", [1]]
    if isinstance(value, str):
        return [5, {"a": 1}]
    if isinstance(value, list):
        return [{"a": 1}, "x"]
    if isinstance(value, dict):
        return [["x"], "x"]
    return [["x"], {"a": [1]}]  # None


def _paths(body: dict[str, Any]) -> list[tuple[str, ...]]:
    """Every field of a receipt, and every field of its provenance, first row, baseline
    comparison and stats."""
    out: list[tuple[str, ...]] = [(k,) for k in body if k != "signature"]
    for outer in ("provenance",):
        out += [(outer, k) for k in body[outer]]
    out += [("rows", 0, k) for k in body["rows"][0]]  # type: ignore[misc]
    out += [("comparisons", "baseline", k) for k in body["comparisons"]["baseline"]]
    out += [("stats", "baseline", k) for k in body["stats"]["baseline"]]
    return out


def _set(body: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        body = body[step]
    body[path[-1]] = value


BODY = json.loads((DATA / "unsigned.json").read_text())
CASES = [
    (path, wrong)
    for path in _paths(BODY)
    for wrong in _wrong(
        BODY[path[0]]
        if len(path) == 1
        else BODY[path[0]][path[1]]
        if len(path) == 2
        else BODY[path[0]][path[1]][path[2]]
    )
]


@pytest.mark.parametrize(
    ("path", "wrong"), CASES, ids=[f"{'.'.join(map(str, p))}={w!r}" for p, w in CASES]
)
def test_a_wrong_type_in_any_field_is_refused_in_one_line(
    tmp_path: Path, path: tuple[Any, ...], wrong: Any
) -> None:
    body = json.loads(json.dumps(BODY))
    _set(body, path, wrong)
    target = tmp_path / "receipt.json"
    target.write_text(json.dumps(body))
    try:
        found = read_filed(target)
    except InputError as exc:  # not a receipt at all: the gate and `receipts` say so
        said = str(exc)
        assert said.startswith(f"{target}: not valid JSON of the expected shape: ")
    else:
        assert isinstance(found, Unchecked), f"{path} = {wrong!r} was taken as a receipt"
        said = found.problem
    assert "\n" not in said and "Traceback" not in said
    assert "$." in said or "older skillbench" in said, said  # it names the field


def test_a_hostile_team_receipt_is_a_one_line_gate_refusal(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI: a receipt whose head is sound but whose counts are the wrong type is
    the newest of its cell, so the gate refuses (exit 1, one line), never skips it to reach an
    older PASS and never prints a traceback."""
    for key in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(key, "tests@skillbench.invalid")
    skill = inputs(tmp_path)
    write(tmp_path / "w", None)  # a good receipt for the same bytes, in the local store
    shutil.rmtree(store_dir("greeter", BODY["digest"]))
    repo = tmp_path / "team"
    (repo / "evals/greeter/v1").mkdir(parents=True)
    git(repo, "init", "-q")
    shutil.copytree(skill, repo / "skills/greeter/v1")
    (repo / "skills/greeter/versions.json").write_text(json.dumps({"v1": BODY["digest"]}))
    body = json.loads(json.dumps(BODY))
    body["comparisons"]["baseline"]["win"] = "5"
    body["provenance"]["created_at"] = "2026-11-30T10:00:00+00:00"
    (repo / "evals/greeter/v1/hostile.json").write_text(json.dumps(body))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hostile")
    code = main(["gate", str(skill), "--team", str(repo), "--allow-partial"])
    captured = capsys.readouterr()
    assert (code, captured.err) == (1, "")
    assert captured.out.strip() == (
        "gate refused: greeter: the newest measured receipt (run run-main) is not a receipt "
        "skillbench writes (Expected `int`, got `str` - at `$.comparisons[...].win`)"
    )
    assert msgspec.json.decode((DATA / "unsigned.json").read_bytes(), type=Receipt)
