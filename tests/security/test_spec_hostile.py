"""Hostile or broken asset files: one clear located error, never a traceback or a hang."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.evals import SpecError, load_case, load_triggers
from skillbench.evals.yamlsrc import MAX_BYTES
from tests.helpers import make_skill


def only_error(path: Path, skill: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_case(path, skill)
    (problem,) = info.value.problems
    assert problem.path == str(path) and problem.severity == "error"
    return f"{problem.line}: {problem.message}"


def case_file(tmp_path: Path, content: str | bytes) -> tuple[Path, Path]:
    skill = make_skill(tmp_path, "demo", {"evals/cases/c.yaml": content})
    return skill / "evals/cases/c.yaml", skill


def test_yaml_syntax_error_has_its_line(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, "task: t\nchecks:\n  - file_exists: [a\n  - b: c\n"))
    assert got == "4: YAML syntax: expected ',' or ']', but got ':'"


def test_tabs_get_a_hint(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, b"task: t\nchecks:\n\t- file_exists: a\n"))
    assert got.startswith("3: YAML syntax:") and "not tabs" in got


def test_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        bomb.append(f"{cur}: &{cur} [{', '.join(['*' + prev] * 9)}]")
    bomb.append("task: *i")
    got = only_error(*case_file(tmp_path, "\n".join(bomb) + "\n"))
    assert "alias bomb" in got


def test_huge_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path, skill = case_file(tmp_path, "task: t\n")
    with path.open("ab") as fh:
        fh.truncate(50 * 1024 * 1024)
    got = only_error(path, skill)
    assert (
        got
        == f"1: file is larger than {MAX_BYTES // 1024} KiB; keep eval assets small and put large content in a fixture"
    )


def test_binary_file(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, b"task: t\n\x00\x01\x02\xff"))
    assert got == "2: file holds NUL bytes; is it binary?"


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, b"task: t\njudge: caf\xe9\n"))
    assert got == "2: not valid UTF-8 (byte 0xe9); save the file as UTF-8"


def test_bom(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, b"\xef\xbb\xbftask: t\n"))
    assert got == "1: file starts with a byte-order mark; save it as UTF-8 without BOM"


def test_list_instead_of_map(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, "- task: t\n"))
    assert got == "1: a case must be a mapping of fields (task, checks, ...), got a list"


def test_empty_file(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, ""))
    assert (
        got
        == "1: a case must be a mapping of fields (task, checks, ...), got nothing (the file is empty)"
    )


def test_duplicate_keys(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, "task: a\nsetup: x\ntask: b\n"))
    assert got == "3: duplicate key 'task'"


def test_python_tags_are_refused(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, "task: !!python/object/apply:os.system ['true']\n"))
    assert got.startswith("1: unsupported YAML tag")


def test_multiple_documents(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, "task: a\n---\ntask: b\n"))
    assert got == "2: YAML syntax: but found another document"


def test_unreadable_path_is_an_error(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, "demo")
    (skill / "evals/cases/c.yaml").mkdir(parents=True)
    got = only_error(skill / "evals/cases/c.yaml", skill)
    assert got.startswith("1: cannot read:")


# --- triggers -------------------------------------------------------------------------


def triggers(tmp_path: Path, body: str, name: str = "demo") -> list[str]:
    skill = make_skill(tmp_path, name, {"evals/triggers.yaml": body})
    try:
        _, found = load_triggers(skill / "evals/triggers.yaml", name)
    except SpecError as exc:
        found = exc.problems
    return [f"{p.line}: {p.severity}: {p.message}" for p in found]


def test_triggers_valid(tmp_path: Path) -> None:
    skill = make_skill(
        tmp_path,
        "demo",
        {"evals/triggers.yaml": "should_trigger: [a, b]\nshould_not_trigger:\n  - c\n"},
    )
    loaded, warnings = load_triggers(skill / "evals/triggers.yaml", "demo")
    assert (loaded.should_trigger, loaded.should_not_trigger, warnings) == (("a", "b"), ("c",), [])


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("should_trigger: a\n", ["1: error: `should_trigger` must be a list, got a string"]),
        (
            "should_trigger: [a, 3]\n",
            ["1: error: `should_trigger` item 2 must be a string, got an integer"],
        ),
        ("should_trigger:\n  - a\n  - ''\n", ["3: error: `should_trigger` item 2 is empty"]),
        (
            "should_trigger: []\n",
            [
                "1: error: a triggers file needs prompts in `should_trigger` and/or `should_not_trigger`"
            ],
        ),
        (
            "should_trigger: [a]\nshould_not: [b]\n",
            [
                "2: error: unknown field `should_not` in a triggers file; did you mean `should_not_trigger`?"
            ],
        ),
        (
            "should_trigger: [a]\nshould_not_trigger: [a]\n",
            ["2: error: prompt 'a' is in both lists"],
        ),
        ("should_trigger: [a, a]\n", ["1: warning: duplicate prompt in `should_trigger`: 'a'"]),
        (
            "should_trigger: [a]\nshould_not_trigger:\n  - please use demo here\n",
            ["3: warning: should-not-trigger prompt names the skill 'demo'; it tests nothing"],
        ),
        ("should_trigger: [a]\nshould_not_trigger:\n  - a demonstration\n", []),
        (
            "[a]\n",
            [
                "1: error: a triggers file must be a mapping of fields (should_trigger, should_not_trigger), got a list"
            ],
        ),
    ],
)
def test_triggers_rules(tmp_path: Path, body: str, expected: list[str]) -> None:
    assert triggers(tmp_path, body) == expected


def test_control_characters(tmp_path: Path) -> None:
    got = only_error(*case_file(tmp_path, "task: t\njudge: a\x07b\n"))
    assert got == "2: character U+0007 is not allowed in YAML"
