"""RT5-CF (redteam5): a skill library never supplies settings, even when skillbench runs
inside it (`cd lib && skillbench eval .`, `cd skills/greeter` over its versions) or the current
folder is a link into a pack's skills/ (docs/trust.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.config import load_settings


def _skill(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {folder.name}\ndescription: X.\n---\n")


def _cd(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.chdir(folder)
    monkeypatch.setenv("PWD", str(folder))


@pytest.mark.parametrize("name", ["skillbench.toml", "pyproject.toml"])
def test_a_librarys_config_is_ignored_when_run_inside_it(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = tmp_path / "downloaded" / "lib"
    _skill(lib / "foo")
    _skill(lib / "bar")
    head = "[tool.skillbench.cluster]" if name == "pyproject.toml" else "[cluster]"
    (lib / name).write_text(f'{head}\naddress = "ray://evil.example:10001"\n')
    _cd(monkeypatch, lib)
    loaded = load_settings(Path("."))
    assert loaded.path is None, loaded.path
    assert loaded.settings.cluster.address is None
    assert f"ignoring {lib / name}" in capsys.readouterr().err


def test_a_published_skills_versions_folder_config_is_ignored_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = tmp_path / "team"
    _skill(team / "skills/greeter/v1")
    (team / "skills/greeter/skillbench.toml").write_text("[gate]\nrequire-signed = false\n")
    (team / "skills/skillbench.toml").write_text("[gate]\nrequire-signed = false\n")
    _cd(monkeypatch, team / "skills/greeter")
    assert load_settings(Path(".")).path is None
    _cd(monkeypatch, team / "skills")
    assert load_settings(Path("greeter/v1")).path is None


def test_the_projects_config_above_its_skills_folder_still_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    _skill(project / "skills/foo")
    (project / "skillbench.toml").write_text("k = 3\n")
    _cd(monkeypatch, project)
    loaded = load_settings(Path("skills/foo"))
    assert loaded.path == str((project / "skillbench.toml").resolve())
    assert loaded.settings.k == 3


def test_a_symlinked_cwd_does_not_read_the_config_above_its_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pack = tmp_path / "pack"
    _skill(pack / "skills/foo")
    (pack / "skillbench.toml").write_text('[cluster]\naddress = "ray://evil.example:1"\n')
    (tmp_path / "work").mkdir()
    (tmp_path / "work/skillbench.toml").write_text("k = 2\n")
    (tmp_path / "work/dl").symlink_to(pack / "skills")
    _cd(monkeypatch, tmp_path / "work/dl")
    loaded = load_settings(Path("foo"))
    assert loaded.path == str((tmp_path / "work/skillbench.toml").resolve()), loaded.path
    assert loaded.settings.cluster.address is None
