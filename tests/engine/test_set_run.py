"""Set runs without sandboxes: which skills a library run picks (--only, --changed-since in a
real git repository), cells refused up front, cells that fail before any session, and the flags
a set run does not take."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.engine.sets import changed_since, select_skills
from skillbench.errors import OptionsError
from skillbench.results.cellset import read_set
from tests.helpers import make_skill, write

CASE = "task: Create out.txt\nchecks:\n  - file_exists: out.txt\n"


def git(repo: Path, *args: str, input_text: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        input=input_text,
    )
    return done.stdout.strip()


def library(root: Path, *names: str) -> Path:
    for name in names:
        make_skill(root / "skills", name, {"evals/cases/one.yaml": CASE})
    return root / "skills"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    library(tmp_path, "alpha", "beta", "gamma", "delta")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    return tmp_path


def test_changed_since_picks_exactly_the_skills_whose_digest_or_evals_changed(repo: Path) -> None:
    skills = repo / "skills"
    base = git(repo, "rev-parse", "HEAD")
    assert select_skills([skills], [], base) == []
    (skills / "alpha/SKILL.md").write_text((skills / "alpha/SKILL.md").read_text() + "More.\n")
    write(skills / "beta", {"evals/cases/two.yaml": CASE})  # an eval added, untracked
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "alpha and beta")
    make_skill(skills, "epsilon")  # new since the base, not committed
    # a file the digest does not hold (the skill's own run folder) changes no skill
    write(skills / "gamma", {".skillbench/runs/x/summary.json": "{}"})
    picked = select_skills([skills], [], base)
    assert [p.name for p in picked] == ["alpha", "beta", "epsilon"]
    assert [p.name for p in select_skills([skills], [], "HEAD")] == ["epsilon"]
    # an edit in the working tree, not committed, counts too; so does a deleted eval
    (skills / "delta/evals/cases/one.yaml").unlink()
    assert changed_since(skills / "delta", "HEAD")
    assert not changed_since(skills / "gamma", "HEAD")


def test_changed_since_names_a_bad_revision_or_a_folder_outside_git(
    repo: Path, tmp_path_factory
) -> None:
    with pytest.raises(OptionsError, match="--changed-since nope: no such revision"):
        select_skills([repo / "skills"], [], "nope")
    elsewhere = library(tmp_path_factory.mktemp("nogit"), "solo")
    with pytest.raises(OptionsError, match="is not in a git repository"):
        select_skills([elsewhere], [], "HEAD")


def test_changed_since_never_writes_through_a_link_of_the_old_tree(repo: Path, tmp_path) -> None:
    # the base revision's tree is rebuilt under a temporary folder: a link there named like
    # a folder later entries go into must not carry those writes outside it
    outside = tmp_path / "outside"
    outside.mkdir()
    skills = repo / "skills"
    link = git(repo, "hash-object", "-w", "--stdin", input_text=str(outside))
    blob = git(repo, "hash-object", "-w", "--stdin", input_text="planted\n")
    inner = git(repo, "mktree", input_text=f"100644 blob {blob}\tplanted.txt\n")
    skill_md = git(repo, "rev-parse", "HEAD:skills/alpha/SKILL.md")
    evil = git(
        repo,
        "mktree",
        input_text=f"100644 blob {skill_md}\tSKILL.md\n120000 blob {link}\tdir\n"
        f"040000 tree {inner}\tdir\n",
    )
    skills_tree = git(repo, "mktree", input_text=f"040000 tree {evil}\talpha\n")
    top = git(repo, "mktree", input_text=f"040000 tree {skills_tree}\tskills\n")
    commit = git(repo, "commit-tree", top, "-m", "hostile base")
    assert changed_since(skills / "alpha", commit)
    assert list(outside.iterdir()) == []


def test_only_keeps_the_named_skills_and_names_an_unknown_one(repo: Path) -> None:
    skills = repo / "skills"
    assert [p.name for p in select_skills([skills], ["gamma", "alpha"], None)] == [
        "alpha",
        "gamma",
    ]
    with pytest.raises(OptionsError, match="--only zeta: no such skill here"):
        select_skills([skills], ["zeta"], None)


def test_a_cell_whose_agent_cannot_use_its_model_is_refused_up_front(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    skills = library(tmp_path, "alpha")
    out = tmp_path / "set"
    argv = ["eval", str(skills), "--agent", "builtin,claude-code", "--model", "openai/gpt-4.1"]
    code = main([*argv, "--out", str(out), "--no-gen", "--quiet"])
    captured = capsys.readouterr()
    # claude-code speaks the Anthropic Messages API: refused in one line, before anything
    refused = [line for line in captured.err.splitlines() if line.startswith("refused ")]
    assert refused == [
        "refused alpha@claude-code@openai/gpt-4.1: --agent claude-code speaks the Anthropic API: "
        "use --model anthropic/<model>, not openai/gpt-4.1"
    ]
    assert code == 2  # the other cell could not start: no key for its model
    cells = {c.id: c for c in read_set(out).cells}
    assert cells["alpha@claude-code@openai/gpt-4.1"].status == "refused"
    builtin = cells["alpha@builtin@openai/gpt-4.1"]
    assert (builtin.status, builtin.reason) == (
        "failed",
        "OPENAI_API_KEY is not set, and the model openai/gpt-4.1 needs it: export it, or use "
        "--model scripted/<name> for an offline run",
    )
    table = captured.out.splitlines()  # the matrix, as `report SETDIR` renders it
    assert [line.split()[:2] for line in table[2:4]] == [
        ["alpha@builtin@openai/gpt-4.1", "FAILED"],
        ["alpha@claude-code@openai/gpt-4.1", "REFUSED"],
    ]
    assert f"alpha@builtin@openai/gpt-4.1: failed: {builtin.reason}" in table
    assert table[-2:] == [f"set: {out}", f"report: {out / 'report.html'}"]


def test_every_cell_refused_is_one_line_and_no_folder(tmp_path: Path, capsys) -> None:
    skills = library(tmp_path, "alpha")
    out = tmp_path / "set"
    argv = ["eval", str(skills), "--agent", "codex", "--model", "anthropic/claude-sonnet-4-6"]
    assert main([*argv, "--out", str(out), "--no-gen"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        "skillbench: error: every cell was refused: no agent given can use a model given"
    )
    assert not out.exists()


def test_set_flags_a_set_run_does_not_take(tmp_path: Path, capsys) -> None:
    skills = library(tmp_path, "alpha", "beta")
    for flag in ("--oracle", "--triggers-only"):
        assert main(["eval", str(skills), flag]) == 2
        assert (
            capsys.readouterr()
            .err.strip()
            .endswith(f"{flag} takes one skill; a set run (a library or a matrix) has cells")
        )
    assert main(["eval", str(skills), "--junit", str(tmp_path / "x.xml")]) == 2
    capsys.readouterr()
    assert main(["eval", "--only", "alpha"]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("--only and --changed-since pick skills of a library root: name one")
    )


def test_plan_of_a_set_estimates_every_cell_and_starts_nothing(tmp_path: Path, capsys) -> None:
    skills = library(tmp_path, "alpha", "beta")
    out = tmp_path / "set"
    argv = ["eval", str(skills), "--plan", "--agent", "builtin,codex", "--model", "scripted/demo"]
    assert main([*argv, "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # one case x two arms per cell; codex runs the same sessions in its CLI
    assert lines[0].startswith("plan: 4 cell(s), 8 session(s), ~$0.00, ~")
    assert lines[1:5] == [
        f"  {cell}: 2 session(s) to run, ~$0.00"
        for cell in (
            "alpha@builtin@scripted/demo",
            "alpha@codex@scripted/demo",
            "beta@builtin@scripted/demo",
            "beta@codex@scripted/demo",
        )
    ]
    assert lines[-1] == "nothing was started (--plan)"
    assert not out.exists()


def test_a_skill_folder_alone_is_no_set_run(tmp_path: Path, capsys) -> None:
    # the single-skill path is untouched: `eval SKILL --plan` prints the skill's own plan
    skills = library(tmp_path, "alpha")
    assert main(["eval", str(skills / "alpha"), "--plan", "--model", "scripted/demo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("plan: alpha (sha256:")
    assert "set:" not in out


def test_matrix_in_the_config_makes_cells_and_a_flag_replaces_its_list(
    tmp_path: Path, capsys
) -> None:
    skills = library(tmp_path, "alpha")
    matrix = '[matrix]\nagents = ["builtin", "codex"]\nmodels = ["scripted/demo"]\n'
    write(tmp_path, {"skillbench.toml": matrix})
    assert main(["eval", str(skills / "alpha"), "--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("plan: 2 cell(s), 4 session(s)")
    assert [line.split(":")[0].strip() for line in lines[1:3]] == [
        "alpha@builtin@scripted/demo",
        "alpha@codex@scripted/demo",
    ]
    assert main(["eval", str(skills / "alpha"), "--plan", "--agent", "codex"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("plan: 1 cell(s), 2 session(s)")
    assert lines[1].startswith("  alpha@codex@scripted/demo: ")
