"""Case, suite and check validation: every rule reports the right `path:line`."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.evals import SpecError, load_assets, load_case, load_suite
from tests.helpers import make_skill


def problems_of(skill: Path, rel: str) -> list[str]:
    """Load the case or suite at `rel` and return its problems as `line: severity: message`."""
    path = skill / rel
    loader = load_suite if path.name == "suite.yaml" else load_case
    try:
        _, warnings = loader(path, skill)
        found = warnings
    except SpecError as exc:
        found = exc.problems
    for p in found:
        assert p.path == str(path)
    return [f"{p.line}: {p.severity}: {p.message}" for p in found]


def case(tmp_path: Path, body: str, extra: dict[str, str] | None = None) -> list[str]:
    skill = make_skill(tmp_path, "demo", {"evals/cases/c.yaml": body, **(extra or {})})
    return problems_of(skill, "evals/cases/c.yaml")


def test_valid_case_loads_with_defaults(tmp_path: Path) -> None:
    skill = make_skill(
        tmp_path,
        "demo",
        {
            "evals/cases/hello.yaml": """
                task: Write hello.txt
                checks:
                  - file_exists: hello.txt
                  - transcript_mentions: hello
                files:
                  src/a.py: "print(1)\\n"
                bucket: explicit
                requires: [git, "python3:json"]
            """,
        },
    )
    loaded, warnings = load_case(skill / "evals/cases/hello.yaml", skill)
    assert warnings == []
    assert loaded.name == "hello"
    assert loaded.timeout_minutes == 120 and loaded.max_turns == 200
    assert [c.name for c in loaded.checks] == [
        "file_exists: hello.txt",
        "transcript_mentions: hello",
    ]
    assert [c.line for c in loaded.checks] == [3, 4]
    assert loaded.files == {"src/a.py": "print(1)\n"}
    assert loaded.requires == ("git", "python3:json")


def test_unknown_field_has_did_you_mean(tmp_path: Path) -> None:
    got = case(tmp_path, "task: t\nchecks: [{file_exists: a}]\ntiemout_minutes: 5\n")
    assert got == [
        "3: error: unknown field `tiemout_minutes` in a case; did you mean `timeout_minutes`?"
    ]


def test_unknown_field_without_close_match_lists_known(tmp_path: Path) -> None:
    (msg,) = case(tmp_path, "task: t\nchecks: [{file_exists: a}]\nzzz: 1\n")
    assert msg.startswith("3: error: unknown field `zzz` in a case (known: task, checks,")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("timeout_minutes: soon", "`timeout_minutes` must be an integer, got a string"),
        ("max_turns: yes", "`max_turns` must be an integer, got a boolean"),
        ("judge: [a]", "`judge` must be a string, got a list"),
        ("files: [a]", "`files` must be a mapping, got a list"),
        ("requires: git", "`requires` must be a list, got a string"),
        ("checks: file_exists", "`checks` must be a list, got a string"),
        ("setup: 3", "`setup` must be a string, got an integer"),
    ],
)
def test_wrong_types_name_field_and_type(tmp_path: Path, line: str, expected: str) -> None:
    assert case(tmp_path, f"task: t\n{line}\n") == [f"2: error: {expected}"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "task: t\ntimeout_minutes: 121\n",
            "2: error: `timeout_minutes` must be between 1 and 120, got 121",
        ),
        (
            "task: t\ntimeout_minutes: 0\n",
            "2: error: `timeout_minutes` must be between 1 and 120, got 0",
        ),
        ("task: t\nmax_turns: -3\n", "2: error: `max_turns` must be at least 1, got -3"),
        (
            "task: t\nbucket: easy\n",
            "2: error: `bucket` must be one of explicit, implicit, contextual, negative, adversarial, got 'easy'",
        ),
        (
            "task: t\nrequires: [git, 'has space']\n",
            "2: error: `requires` entry 'has space' is neither a program name nor `python3:<module>`",
        ),
        (
            "task: t\nrequires: ['python3:']\n",
            "2: error: `requires` entry 'python3:' is neither a program name nor `python3:<module>`",
        ),
        ("task: '   '\n", "1: error: `task` is empty"),
        (
            "checks: [{file_exists: a}]\n",
            "1: error: missing required field `task` (the prompt the agent is given)",
        ),
        ("task: t\njudge: ''\n", "2: error: `judge` is empty; give it text or remove the line"),
    ],
)
def test_range_and_value_rules(tmp_path: Path, body: str, expected: str) -> None:
    got = case(tmp_path, body)
    assert expected in got


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/etc/passwd", "is absolute; give a path relative to the workspace"),
        ("a/../../b", "contains `..`"),
        ("..", "contains `..`"),
        (
            ".claude/settings.json",
            "starts with `.claude`, which is reserved for the agent's own settings",
        ),
        (".claude", "starts with `.claude`, which is reserved for the agent's own settings"),
        (".claudeX/a", "starts with `.claude`, which is reserved for the agent's own settings"),
    ],
)
def test_files_paths_rejected_at_their_line(tmp_path: Path, path: str, reason: str) -> None:
    got = case(
        tmp_path, f"task: t\nchecks: [{{file_exists: a}}]\nfiles:\n  ok.txt: x\n  '{path}': y\n"
    )
    assert got == [f"5: error: `files` path {path!r} {reason}"]


def test_files_content_must_be_text(tmp_path: Path) -> None:
    got = case(tmp_path, "task: t\nchecks: [{file_exists: a}]\nfiles:\n  a.txt:\n    - 1\n")
    assert got == ["5: error: `files` entry 'a.txt' must be text, got a list"]


def test_fixture_must_exist_relative_to_case_file(tmp_path: Path) -> None:
    got = case(tmp_path, "task: t\nchecks: [{file_exists: a}]\nfixture: ../fixtures/none\n")
    assert len(got) == 1 and got[0].startswith(
        "3: error: fixture folder '../fixtures/none' does not exist"
    )
    skill = make_skill(
        tmp_path / "b",
        "demo",
        {
            "evals/cases/c.yaml": "task: t\nchecks: [{file_exists: a}]\nfixture: ../fixtures/seed\n",
            "evals/fixtures/seed/x.txt": "x",
        },
    )
    loaded, _ = load_case(skill / "evals/cases/c.yaml", skill)
    assert loaded.fixture == str((skill / "evals/fixtures/seed").resolve())


def test_fixture_outside_skill_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    got = case(tmp_path, "task: t\nchecks: [{file_exists: a}]\nfixture: ../../../elsewhere\n")
    assert got == ["3: error: fixture '../../../elsewhere' is outside the skill folder"]


def test_check_shapes(tmp_path: Path) -> None:
    got = case(
        tmp_path,
        """
        task: t
        checks:
          - file_exists: a.txt
          - {file_exists: a, file_absent: b}
          - [x]
          - file_exists: 3
          - file_exists
          - command_succeeds: "  "
        """,
    )
    assert got == [
        "4: error: a check is a single-key map `{kind: argument}` (e.g. `file_exists: out.txt`), got a mapping with 2 keys",
        "5: error: a check is a single-key map `{kind: argument}` (e.g. `file_exists: out.txt`), got a list",
        "6: error: check `file_exists` takes a string argument, got an integer",
        "7: error: check `file_exists` needs an argument: `file_exists: ...`",
        "8: error: `command_succeeds` needs a command",
    ]


def test_unknown_kind_and_bad_regex_are_warnings(tmp_path: Path) -> None:
    skill = make_skill(
        tmp_path,
        "demo",
        {
            "evals/cases/c.yaml": "task: t\nchecks:\n  - transcript_mention: hi\n  - command_matching: '([a'\n  - frobnicate\n"
        },
    )
    loaded, warnings = load_case(skill / "evals/cases/c.yaml", skill)
    assert len(loaded.checks) == 3  # kept: they fail at run time, never the run
    assert [f"{w.line}: {w.message}" for w in warnings] == [
        "3: unknown check kind `transcript_mention`: it will fail at run time; did you mean `transcript_mentions`?",
        "4: invalid regex for `command_matching`: unterminated character set at position 1; it will fail at run time",
        "5: unknown check kind `frobnicate`: it will fail at run time",
    ]


def test_hygiene_warnings(tmp_path: Path) -> None:
    got = case(
        tmp_path,
        """
        task: Fix the bug; the grader looks at out.txt
        checks:
          - transcript_omits: ""
          - transcript_mentions: ""
          - file_absent: /etc/shadow
          - file_exists: ../x
        """,
    )
    assert got == [
        "1: warning: task mentions 'grader': the agent never sees the evals, so do not describe how it is scored",
        "3: warning: `transcript_omits` of empty text always fails; it cannot pass",
        "4: warning: `transcript_mentions` of empty text always passes; it cannot fail",
        "5: warning: `file_absent` path '/etc/shadow' is absolute; check paths are relative to the workspace; the check will always fail (it cannot pass)",
        "6: warning: `file_exists` path '../x' contains `..` and may leave the workspace; the check will always fail",
    ]


@pytest.mark.parametrize("word", ["evals/", "checks", "rubric", "triggers.yaml", "Grader"])
def test_task_mentioning_eval_internals_warns(tmp_path: Path, word: str) -> None:
    got = case(tmp_path, f"task: 'look at {word} here'\nchecks: [{{file_exists: a}}]\n")
    assert len(got) == 1 and got[0].startswith(f"1: warning: task mentions {word!r}")


def test_case_without_checks_or_judge_warns(tmp_path: Path) -> None:
    assert case(tmp_path, "task: t\n") == [
        "1: warning: case has no checks and no judge rubric: every row will be a tie"
    ]


def test_suite_rules(tmp_path: Path) -> None:
    skill = make_skill(
        tmp_path,
        "demo",
        {
            "evals/suite.yaml": """
                task: Review the diff
                judge: ignored
                cases:
                  - name: finds-bug
                    checks: [{transcript_mentions: off-by-one}]
                  - name: finds-bug
                    checks: [{transcript_mentions: x}]
                  - name: "bad name"
                  - nmae: typo
                  - plain
            """,
        },
    )
    assert problems_of(skill, "evals/suite.yaml") == [
        "2: warning: a suite is never judged; `judge` is ignored",
        "6: error: duplicate sub-case name 'finds-bug' (first on line 4)",
        "8: error: sub-case name 'bad name' must be letters, digits, `.`, `_` or `-`, starting with a letter or digit",
        "9: error: unknown field `nmae` in a sub-case; did you mean `name`?",
        "9: error: sub-case is missing `name`",
        "10: error: a suite sub-case is a mapping {name, checks}, got a string",
    ]


def test_suite_needs_cases(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, "demo", {"evals/suite.yaml": "task: t\n"})
    assert problems_of(skill, "evals/suite.yaml") == [
        "1: error: a suite needs `cases`: a list of {name, checks}"
    ]
    skill = make_skill(tmp_path / "b", "demo", {"evals/suite.yaml": "task: t\ncases: []\n"})
    assert problems_of(skill, "evals/suite.yaml") == [
        "2: error: `cases` is empty; a suite needs at least one sub-case"
    ]


def test_valid_suite(tmp_path: Path) -> None:
    skill = make_skill(
        tmp_path,
        "demo",
        {
            "evals/suite.yaml": "task: t\ncases:\n  - name: a\n    checks: [{file_exists: x}]\n  - name: b\n    checks: [transcript_mentions: y]\n"
        },
    )
    suite, warnings = load_suite(skill / "evals/suite.yaml", skill)
    assert warnings == []
    assert [(s.name, s.line, [c.name for c in s.checks]) for s in suite.cases] == [
        ("a", 3, ["file_exists: x"]),
        ("b", 5, ["transcript_mentions: y"]),
    ]


def test_discovery_is_exact_and_sorted(tmp_path: Path) -> None:
    ok = "task: t\nchecks: [{file_exists: a}]\n"
    skill = make_skill(
        tmp_path,
        "demo",
        {
            "evals/cases/b.yml": ok,
            "evals/cases/a.yaml": ok,
            "evals/cases/c.yaml": ok,
            "evals/cases/c.yml": ok,
            "evals/cases/notes.txt": "x",
            "evals/cases/d.YAML": ok,
            "evals/suite.yml": "task: t\ncases: [{name: a}]\n",
            "evals/triggers.yml": "should_trigger: [x]\n",
        },
    )
    assets = load_assets(skill, "demo")
    assert [c.name for c in assets.cases] == ["a", "b", "c"]
    assert assets.suite is None and assets.triggers is None
    shown = sorted(
        f"{Path(p.path).name}:{p.line}: {p.severity}: {p.message}" for p in assets.problems
    )
    assert shown == [
        "c.yml:1: error: case name 'c' is also c.yaml; rename one",
        "d.YAML:1: warning: ignored: case files end in .yaml or .yml",
        "notes.txt:1: warning: ignored: case files end in .yaml or .yml",
        "suite.yml:1: warning: ignored: the file must be named exactly suite.yaml",
        "triggers.yml:1: warning: ignored: the file must be named exactly triggers.yaml",
    ]
