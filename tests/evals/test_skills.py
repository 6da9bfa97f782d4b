"""SKILL.md front matter, library roots and the catalog, the digest and the staging filter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillbench.evals import SpecError
from skillbench.evals.skills import (
    catalog,
    catalog_lines,
    copy_for_staging,
    digest,
    read_skill,
    skill_files,
)
from tests.helpers import make_skill, write


def skill_error(folder: Path) -> list[str]:
    with pytest.raises(SpecError) as info:
        read_skill(folder)
    return [f"{Path(p.path).name}:{p.line}: {p.message}" for p in info.value.problems]


def test_reads_front_matter(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "pdf-tools", description="Fill PDF forms.")
    skill = read_skill(folder)
    assert (skill.name, skill.description, skill.body_line) == ("pdf-tools", "Fill PDF forms.", 5)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "# no front matter\n",
            [
                "SKILL.md:1: SKILL.md must start with YAML front matter: a `---` line, `name:` and `description:`, then `---`"
            ],
        ),
        (
            "---\nname: x\ndescription: y\n",
            ["SKILL.md:1: front matter is not closed: add a `---` line after it"],
        ),
        ("---\nname: s\n---\n", ["SKILL.md:1: front matter is missing `description`"]),
        ("---\ndescription: d\n---\n", ["SKILL.md:1: front matter is missing `name`"]),
        (
            "---\nname: s\ndescription: 5\n---\n",
            ["SKILL.md:3: `description` must be non-empty text"],
        ),
        (
            "---\nname: Bad_Name\ndescription: d\n---\n",
            [
                "SKILL.md:2: skill name 'Bad_Name' must be lowercase letters, digits and hyphens, at most 64 characters"
            ],
        ),
        (
            "---\nname: s\ndescription: " + "x" * 1025 + "\n---\n",
            ["SKILL.md:3: description is 1025 characters; the limit is 1024"],
        ),
        (
            "---\n- a\n---\n",
            ["SKILL.md:2: front matter must be a mapping with `name` and `description`"],
        ),
        (
            "---\nname: s\ndescription: [unclosed\n---\n",
            ["SKILL.md:3: YAML syntax: expected ',' or ']', but got '<stream end>'"],
        ),
    ],
)
def test_front_matter_rules(tmp_path: Path, text: str, expected: list[str]) -> None:
    write(tmp_path / "s", {"SKILL.md": text})
    assert skill_error(tmp_path / "s") == expected


def test_folder_differing_from_name_is_accepted_with_a_note(tmp_path: Path) -> None:
    """issue 37 item 6: published skills (skill-optimizer's references/pdf-skill is `pdf`)
    are used as they are, staged under their name, with a warning at SKILL.md:line."""
    write(tmp_path / "pdf-skill", {"SKILL.md": "---\nname: pdf\ndescription: d\n---\n"})
    skill = read_skill(tmp_path / "pdf-skill")
    assert skill.name == "pdf"
    [note] = skill.warnings
    assert (note.line, note.severity) == (2, "warning")
    assert "'pdf' does not match its folder 'pdf-skill'" in note.message
    assert "staged as /skills/pdf" in note.message


def test_name_length_limit(tmp_path: Path) -> None:
    name = "a" * 64
    assert read_skill(make_skill(tmp_path, name)).name == name
    long = "a" * 65
    write(tmp_path / long, {"SKILL.md": f"---\nname: {long}\ndescription: d\n---\n"})
    assert "at most 64 characters" in skill_error(tmp_path / long)[0]


def test_catalog_sorted_skips_broken_and_folds_lines(tmp_path: Path) -> None:
    make_skill(tmp_path, "zeta", description="Last one.")
    write(
        tmp_path / "alpha", {"SKILL.md": "---\nname: alpha\ndescription: >\n  Two\n  lines.\n---\n"}
    )
    write(tmp_path / "broken", {"SKILL.md": "no front matter"})
    (tmp_path / "not-a-skill").mkdir()
    assert catalog_lines(catalog(tmp_path)) == ["- alpha: Two lines.", "- zeta: Last one."]


def test_catalog_always_includes_skill_under_test(tmp_path: Path) -> None:
    make_skill(tmp_path / "lib", "zeta")
    outside = read_skill(make_skill(tmp_path / "elsewhere", "beta", description="B."))
    lines = catalog_lines(catalog(tmp_path / "lib", include=outside))
    assert lines == ["- beta: B.", "- zeta: Helps with zeta tasks."]


def tree(tmp_path: Path, name: str = "s") -> Path:
    return make_skill(
        tmp_path,
        name,
        {
            "scripts/run.sh": "echo hi\n",
            "ref/a.md": "A",
            "evals/cases/c.yaml": "task: t\n",
            "fixtures/f.txt": "f",
        },
    )


def test_digest_ignores_evals_git_litter_and_modes(tmp_path: Path) -> None:
    folder = tree(tmp_path)
    before = digest(folder)
    assert before.startswith("sha256:") and len(before) == 7 + 64
    write(
        folder,
        {
            "evals/cases/c.yaml": "task: changed\n",
            "evals/new.txt": "n",
            ".git/HEAD": "ref",
            ".DS_Store": "x",
            "ref/Thumbs.db": "y",
        },
    )
    os.chmod(folder / "scripts/run.sh", 0o755)
    assert digest(folder) == before


@pytest.mark.parametrize(
    "change",
    [
        lambda f: (f / "ref/a.md").write_text("B"),
        lambda f: (f / "ref/a.md").rename(f / "ref/b.md"),
        lambda f: (f / "ref/new.md").write_text(""),
        lambda f: (f / "fixtures/f.txt").write_text("g"),
        lambda f: (f / "sub/evals").mkdir(parents=True) or (f / "sub/evals/x").write_text("x"),
    ],
)
def test_digest_changes_with_any_other_byte_or_name(tmp_path: Path, change) -> None:
    folder = tree(tmp_path)
    before = digest(folder)
    change(folder)
    assert digest(folder) != before


def test_digest_is_unambiguous_across_path_and_content_boundaries(tmp_path: Path) -> None:
    a = make_skill(tmp_path / "a", "s", {"ab": "c"})
    b = make_skill(tmp_path / "b", "s", {"a": "bc"})
    assert digest(a) != digest(b)


def test_symlink_outside_is_reported_not_followed(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    folder = tree(tmp_path, "s")
    os.symlink(tmp_path / "secret.txt", folder / "ref/leak.txt")
    with pytest.raises(SpecError) as info:
        digest(folder)
    (problem,) = info.value.problems
    assert problem.path == str(folder / "ref/leak.txt")
    assert problem.message.startswith("symlink points outside the skill (")


@pytest.mark.parametrize("links", [{"loop1": "loop1"}, {"a": "b", "b": "a"}])
def test_a_symlink_loop_is_a_problem_not_a_traceback(tmp_path: Path, links, capsys) -> None:
    """Eighth outside review (RB2): a link that leads back to itself raised RuntimeError
    out of `digest`, `check` and `eval`."""
    from skillbench.cli import main

    folder = tree(tmp_path, "s")
    for name, target in links.items():
        os.symlink(target, folder / "ref" / name)
    with pytest.raises(SpecError) as info:
        digest(folder)
    assert "symlink loop" in info.value.problems[0].message
    assert main(["check", str(folder)]) == 1  # (check: 1 when the skill has errors)
    said = capsys.readouterr()
    assert "symlink loop" in said.out + said.err and "Traceback" not in said.err


def test_symlink_inside_is_hashed_as_a_link(tmp_path: Path) -> None:
    folder = tree(tmp_path, "s")
    os.symlink("a.md", folder / "ref/alias.md")
    entries = {f.rel: f.link for f in skill_files(folder)}
    assert entries["ref/alias.md"] == "a.md"
    before = digest(folder)
    (folder / "ref/a.md").write_text("changed")
    after = digest(folder)
    os.remove(folder / "ref/alias.md")
    assert before != after != digest(folder)


def test_staging_leaves_out_evals_and_fixtures_and_keeps_modes(tmp_path: Path) -> None:
    folder = tree(tmp_path)
    os.chmod(folder / "scripts/run.sh", 0o755)
    write(folder, {"sub/fixtures/kept.txt": "k"})
    dest = tmp_path / "staged"
    copied = copy_for_staging(folder, dest)
    assert copied == ["SKILL.md", "ref/a.md", "scripts/run.sh", "sub/fixtures/kept.txt"]
    assert not (dest / "evals").exists() and not (dest / "fixtures").exists()
    assert os.access(dest / "scripts/run.sh", os.X_OK)
