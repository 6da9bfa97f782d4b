"""skill-creator's evals/evals.json and trigger JSON files, read where they stand (fixtures
written here in each shape seen in public skills; none copied)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.evals import load_assets
from skillbench.evals.triggers_file import TRIGGER_JSON_NAMES
from tests.helpers import make_skill


def evals_json(evals: list[object], **top: object) -> str:
    return json.dumps({"skill_name": "s", "evals": evals, **top}, indent=2)


def check(capsys: pytest.CaptureFixture[str], skill: Path) -> tuple[int, list[str]]:
    code = main(["check", str(skill)])
    return code, capsys.readouterr().out.splitlines()


def test_every_expectation_shape_becomes_an_expect_check(tmp_path: Path) -> None:
    doc = evals_json(
        [
            {"id": 1, "prompt": "Fill the form", "expectations": ["Uses visible labels"]},
            {
                "id": "two",
                "prompt": "Read the account",
                "assertions": [
                    {"name": "acct", "description": "answer.json has the account number"},
                    {"text": "Mentions the bank"},
                ],
            },
            {"id": 3, "prompt": "Summarise", "expected_output": "A three-line summary"},
        ]
    )
    skill = make_skill(tmp_path, "s", {"evals/evals.json": doc})
    assets = load_assets(skill)
    got = {c.name: [(k.kind, k.arg) for k in c.checks] for c in assets.cases}
    assert got == {
        "eval-1": [("expect", "Uses visible labels")],
        "eval-two": [
            ("expect", "acct: answer.json has the account number"),
            ("expect", "Mentions the bank"),
        ],
        "eval-3": [("expect", "A three-line summary")],
    }
    assert not [p for p in assets.problems if p.severity == "error"]


def test_non_trigger_category_is_a_dormancy_case(tmp_path: Path) -> None:
    doc = evals_json(
        [{"id": 7, "prompt": "What is 2+2?", "category": "non-trigger", "expectations": []}]
    )
    (case,) = load_assets(make_skill(tmp_path, "s", {"evals/evals.json": doc})).cases
    assert case.expect_activation is False


def test_unknown_keys_are_notes_with_lines_and_check_stays_clean(tmp_path, capsys) -> None:
    doc = evals_json(
        [{"id": 1, "prompt": "p", "expectations": ["e"], "version": 2, "weight": 3}],
        metadata={"x": 1},
    )
    skill = make_skill(tmp_path, "s", {"evals/evals.json": doc})
    code, out = check(capsys, skill)
    path = skill / "evals/evals.json"
    assert code == 0
    assert out[-1] == "checked 1 skill: 0 errors, 0 warnings"
    meta = next(line for line in out if "`metadata`" in line)
    assert meta.startswith(f"{path}:") and ": note: `metadata` is not a field of evals.json" in meta
    weight = next(line for line in out if "`weight`" in line)
    n = doc.splitlines().index(next(x for x in doc.splitlines() if '"weight"' in x)) + 1
    assert weight.startswith(f"{path}:{n}: note: `weight` is not a field skillbench knows")
    assert any("become `expect:` checks" in line for line in out)


def test_files_are_staged_and_a_file_inside_the_skill_is_contamination(tmp_path, capsys) -> None:
    doc = evals_json(
        [
            {
                "id": 1,
                "prompt": "Fill it",
                "files": ["evals/files/in.txt", "templates/form.md"],
                "expectations": ["ok"],
            }
        ]
    )
    skill = make_skill(
        tmp_path,
        "s",
        {
            "evals/evals.json": doc,
            "evals/files/in.txt": "input\n",
            "templates/form.md": "# the skill's own template\n",
        },
    )
    (case,) = load_assets(skill).cases
    assert case.files == {
        "evals/files/in.txt": "input\n",
        "templates/form.md": "# the skill's own template\n",
    }
    code, out = check(capsys, skill)
    (warning,) = [line for line in out if ": warning: " in line]
    assert "'templates/form.md' is part of the skill" in warning
    assert "shows the baseline part of the skill (contamination)" in warning
    assert "move the input under evals/files/" in warning
    assert code == 0


@pytest.mark.parametrize("rel", ["../outside.txt", "/etc/passwd", "evals/link.txt"])
def test_files_cannot_leave_the_skill(tmp_path: Path, capsys, rel: str) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    doc = evals_json([{"id": 1, "prompt": "p", "files": [rel], "expectations": ["e"]}])
    skill = make_skill(tmp_path, "s", {"evals/evals.json": doc})
    (skill / "evals/link.txt").symlink_to(tmp_path / "outside.txt")
    code, out = check(capsys, skill)
    assert code == 1
    assert any(": error: `files` path" in line for line in out)


def test_bad_evals_json_is_one_line_per_problem(tmp_path, capsys) -> None:
    doc = '{"evals": [{"id": 1, "expectations": [3]}, {"id": 1, "prompt": "x"}]}'
    skill = make_skill(tmp_path, "s", {"evals/evals.json": doc})
    code, out = check(capsys, skill)
    assert code == 1
    assert any("an eval needs `prompt`" in line for line in out)


@pytest.mark.parametrize("name", TRIGGER_JSON_NAMES)
@pytest.mark.parametrize("where", ["evals/", ""])
def test_trigger_json_under_every_name(tmp_path: Path, name: str, where: str) -> None:
    items = [
        {"query": "deep-read this paper", "should_trigger": True},
        {"prompt": "what time is it", "should_trigger": False},
    ]
    wrapped = {"eval_set.json": {"evals": items}, "trigger-eval.json": {"queries": items}}
    doc = json.dumps(wrapped.get(name, items))
    skill = make_skill(tmp_path, "s", {where + name: doc})
    triggers = load_assets(skill, "s").triggers
    assert triggers is not None
    assert (triggers.should_trigger, triggers.should_not_trigger) == (
        ("deep-read this paper",),
        ("what time is it",),
    )


def test_two_trigger_files_are_one_set_unless_they_conflict(tmp_path: Path, capsys) -> None:
    files = {
        "evals/triggers.yaml": "should_trigger: [a]\nshould_not_trigger: [b]\n",
        "evals/trigger-evals.json": json.dumps(
            [{"query": "a", "should_trigger": True}, {"query": "c", "should_trigger": True}]
        ),
    }
    skill = make_skill(tmp_path, "s", files)
    t = load_assets(skill, "s").triggers
    assert t is not None and (t.should_trigger, t.should_not_trigger) == (("a", "c"), ("b",))
    (skill / "triggers.json").write_text(json.dumps([{"query": "b", "should_trigger": True}]))
    code, out = check(capsys, skill)
    assert code == 1
    (err,) = [line for line in out if ": error: " in line]
    assert err.startswith(f"{skill / 'triggers.json'}:")
    assert "'b'" in err and "triggers.yaml" in err


def test_a_skill_with_only_evals_json_is_not_empty_to_check(tmp_path, capsys) -> None:
    doc = evals_json([{"id": 1, "prompt": "p", "expectations": ["e"]}])
    skill = make_skill(tmp_path, "s", {"evals/evals.json": doc})
    assert [c.name for c in load_assets(skill).cases] == ["eval-1"]


def test_shapes_seen_in_public_skills_bare_list_expect_path_objects_folders(tmp_path) -> None:
    doc = json.dumps(
        [
            {
                "id": "mcp-first",
                "prompt": "Take it over",
                "expect": ["status first"],
                "files": [
                    {"path": "evals/fixtures/one", "purpose": "a seeded repo"},
                    "evals/files/gone.pdf",
                ],
            }
        ],
        indent=2,
    )
    skill = make_skill(
        tmp_path,
        "s",
        {"evals/evals.json": doc, "evals/fixtures/one/a.txt": "A", "evals/fixtures/one/b/c": "C"},
    )
    assets = load_assets(skill)
    (case,) = assets.cases
    assert [(k.kind, k.arg) for k in case.checks] == [("expect", "status first")]
    assert case.files == {"evals/fixtures/one/a.txt": "A", "evals/fixtures/one/b/c": "C"}
    (missing,) = [p for p in assets.problems if p.severity == "warning"]
    gone = next(i for i, x in enumerate(doc.splitlines(), 1) if "gone.pdf" in x)
    assert missing.line == gone and "'evals/files/gone.pdf' does not exist" in missing.message


def test_an_evals_json_skill_runs_end_to_end_in_sandboxes(fake, tmp_path: Path, capsys) -> None:
    from tests.helpers import BASE, CAND, bash, conv, run_eval, skill

    doc = evals_json(
        [
            {
                "id": 1,
                "prompt": "Greet the person named in the input",
                "files": ["evals/files/who.txt"],
                "expectations": ["The greeting names Ada"],
            }
        ]
    )
    folder = skill(tmp_path, {"evals/evals.json": doc, "evals/files/who.txt": "Ada-7731\n"})
    server = fake(
        {
            "conversations": [
                conv(CAND, "Greet the person", bash("cat evals/files/who.txt"), {"text": "Hi"}),
                conv(BASE, "Greet the person", bash("cat evals/files/who.txt"), {"text": "Hi"}),
            ]
        }
    )
    _, _, summary = run_eval(capsys, folder, tmp_path / "run")
    assert [r["case"] for r in summary["rows"]] == ["eval-1"]
    # the input file was staged in both arms' workspaces, where the agent read it
    results = [json.dumps(r.body) for r in server.log() if "Ada-7731" in json.dumps(r.body)]
    assert len(results) >= 2


def test_an_evals_json_without_evals_names_the_list_it_has(tmp_path, capsys) -> None:
    """Seen in a public skill: the list under `test_cases`; the error says where it is."""
    doc = json.dumps({"skill_name": "s", "test_cases": [{"id": "a", "prompt": "p"}]})
    skill = make_skill(tmp_path, "s", {"evals/evals.json": doc})
    code, out = check(capsys, skill)
    assert code == 1
    want = f"{skill / 'evals/evals.json'}:1: error: no `evals` list (the file has `test_cases`)"
    assert any(line.startswith(want) for line in out), out


def test_the_readme_eval_assets_section_leads_with_the_formats_you_already_have() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("\n## Eval assets\n", 1)[1]
    first = next(line for line in section.splitlines() if line.startswith("#"))
    assert first == "### The formats you already have"
