"""`skillbench check`, `digest` and `catalog` from the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.evals.skills import digest
from tests.helpers import make_skill, write

GOOD_CASE = "task: Write out.txt\nchecks:\n  - file_exists: out.txt\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def library(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    make_skill(
        root,
        "alpha",
        {"evals/cases/one.yaml": GOOD_CASE, "evals/triggers.yaml": "should_trigger: [make out]\n"},
    )
    make_skill(root, "beta", {"evals/cases/two.yaml": "task: t\ntiemout_minutes: 3\n"})
    return root


def test_check_clean_skill_exits_0(tmp_path: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", str(library(tmp_path) / "alpha"))
    assert (code, out) == (0, ["checked 1 skill: 0 errors, 0 warnings"])


def test_check_root_reports_every_problem_and_exits_1(tmp_path: Path, capsys) -> None:
    root = library(tmp_path)
    code, out, _ = run(capsys, "check", str(root))
    case = root / "beta/evals/cases/two.yaml"
    assert code == 1
    assert out == [
        f"{case}:2: error: unknown field `tiemout_minutes` in a case; did you mean `timeout_minutes`?",
        "checked 2 skills: 1 error, 0 warnings",
    ]


def test_check_warnings_only_exits_0(tmp_path: Path, capsys) -> None:
    skill = make_skill(tmp_path, "s", {"evals/cases/c.yaml": "task: t\nchecks: [frob]\n"})
    code, out, _ = run(capsys, "check", str(skill))
    assert code == 0
    assert out[-1] == "checked 1 skill: 0 errors, 1 warning"
    assert out[0].endswith("c.yaml:2: warning: unknown check kind `frob`: it will fail at run time")


def test_check_not_a_skill_exits_2(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "check", str(tmp_path / "empty"))
    assert code == 2
    assert "not a skill (no" in err and "not a library root" in err


def test_check_broken_skill_md_is_reported(tmp_path: Path, capsys) -> None:
    write(tmp_path / "lib/bad", {"SKILL.md": "no front matter\n"})
    make_skill(tmp_path / "lib", "good")
    code, out, _ = run(capsys, "check", str(tmp_path / "lib/bad"))
    assert code == 1
    assert out[0] == (
        f"{tmp_path / 'lib/bad/SKILL.md'}:1: error: SKILL.md must start with YAML "
        "front matter: a `---` line, `name:` and `description:`, then `---`"
    )


def test_digest_and_catalog(tmp_path: Path, capsys) -> None:
    root = library(tmp_path)
    code, out, _ = run(capsys, "digest", str(root / "alpha"))
    assert (code, out) == (0, [digest(root / "alpha")])
    code, out, _ = run(capsys, "catalog", str(root))
    assert (code, out) == (
        0,
        ["- alpha: Helps with alpha tasks.", "- beta: Helps with beta tasks."],
    )
    code, out2, _ = run(capsys, "catalog", str(root / "beta"))
    assert out2 == out


def test_digest_of_non_skill_is_a_usage_error(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "digest", str(tmp_path))
    assert code == 2 and "not a skill folder (no SKILL.md)" in err


def test_console_script_and_module_entry_points(tmp_path: Path) -> None:
    root = library(tmp_path)
    for argv in (["skillbench"], [sys.executable, "-m", "skillbench"]):
        exe = argv if argv[0] != "skillbench" else [str(Path(sys.executable).parent / "skillbench")]
        done = subprocess.run([*exe, "check", str(root)], capture_output=True, text=True)
        assert done.returncode == 1, done.stderr
        assert done.stdout.splitlines()[-1] == "checked 2 skills: 1 error, 0 warnings"
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["check", "digest", "catalog", "doctor", "tune"])
def test_every_command_has_useful_help(command: str, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: skillbench {command}")
    assert len(text.split()) > 25  # a description, not just the usage line


def test_config_shows_values_and_sources(tmp_path: Path, capsys, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.skillbench]\nparallel = 8\nmodel = "openai/gpt-4.1"\nteam = "../team"\n'
    )
    monkeypatch.delenv("SKILLBENCH_MODEL", raising=False)
    assert main(["config", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"config file: {tmp_path / 'pyproject.toml'}"
    assert f"parallel = 8    ({tmp_path / 'pyproject.toml'})" in out
    assert "k = 1    (default)" in out
    assert f"team = '{tmp_path}/../team'    ({tmp_path / 'pyproject.toml'})" in out
    monkeypatch.setenv("SKILLBENCH_MODEL", "scripted/demo")
    assert main(["config", str(tmp_path)]) == 0
    assert "model = 'scripted/demo'    (SKILLBENCH_MODEL)" in capsys.readouterr().out.splitlines()
    (tmp_path / "pyproject.toml").write_text("[tool.skillbench]\nparallel = 'many'\n")
    assert main(["config", str(tmp_path)]) == 2
    assert "Expected `int`, got `str`" in capsys.readouterr().err
    # the sandbox's write caps are a table of sizes
    (tmp_path / "pyproject.toml").write_text('[tool.skillbench.sandbox]\ndisk = "512m"\n')
    assert main(["config", str(tmp_path)]) == 0
    assert "disk': '512m'" in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text('[tool.skillbench.sandbox]\ndisk = "lots"\n')
    assert main(["config", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"skillbench: error: {tmp_path / 'pyproject.toml'}: sandbox.disk = 'lots' is not a "
        "size; write it like 512m or 2g"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["eval", "SKILL", "--model", "gemini/pro", "--no-gen"],
            "skillbench: error: model 'gemini/pro' must be anthropic/<model>, openai/<model>, "
            "google/<model> or scripted/<name> (did you mean google/pro?)",
        ),
        (
            ["eval", "SKILL", "--model", "scripted/nope", "--no-gen"],
            "skillbench: error: no script named 'nope'",
        ),
        (
            ["triggers", "SKILL", "--model", "scripted/nope"],
            "skillbench: error: --model: no script named 'nope'",
        ),
        (
            ["eval", "SKILL", "--model", "anthropic/claude-sonnet-4-6", "--no-gen"],
            "skillbench: error: ANTHROPIC_API_KEY is not set",
        ),
    ],
)
def test_bad_models_are_one_line_errors(
    tmp_path: Path, capsys, monkeypatch, argv: list[str], message: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    skill = make_skill(
        tmp_path,
        "s",
        {"evals/cases/c.yaml": GOOD_CASE, "evals/triggers.yaml": "should_trigger: [x]\n"},
    )
    code = main([str(skill) if a == "SKILL" else a for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(message) and "Traceback" not in err
