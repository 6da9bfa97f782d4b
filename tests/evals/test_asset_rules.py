"""Asset rules that `check` and `eval` must agree on: the reserved `suite` case name, one rule
for symlinks (inside the skill is fine), front matter Claude Code accepts, and JUnit rows for a
skipped suite."""

from __future__ import annotations

import os
from pathlib import Path
from xml.etree import ElementTree

import msgspec
import pytest

from skillbench.cli import main
from skillbench.evals.skills import evals_digest, read_skill
from skillbench.report.junit import eval_junit
from skillbench.results.summary import Summary
from tests.helpers import make_skill

CASE = "task: t\nchecks: [{file_exists: a}]\n"


def test_a_case_named_suite_is_an_error_in_check_and_eval(tmp_path: Path, capsys) -> None:
    skill = make_skill(
        tmp_path,
        "demo",
        {
            "evals/cases/suite.yaml": CASE,
            "evals/suite.yaml": "task: t\ncases:\n  - name: one\n    checks: [{file_exists: a}]\n",
        },
    )
    message = (
        f"{skill}/evals/cases/suite.yaml:1: error: the case name `suite` is taken by "
        "evals/suite.yaml (its rows are named suite/<name>); rename this file"
    )
    assert main(["check", str(skill)]) == 1
    assert message in capsys.readouterr().out.splitlines()
    assert main(["eval", str(skill), "--model", "scripted/demo", "--no-gen"]) == 2
    assert message in capsys.readouterr().err.splitlines()


def test_one_rule_for_links_in_evals(tmp_path: Path, capsys) -> None:
    skill = make_skill(
        tmp_path, "demo", {"scripts/verify.py": "print('ok')\n", "evals/cases/a.yaml": CASE}
    )
    os.symlink("../scripts/verify.py", skill / "evals/verify.py")  # stays inside the skill
    assert main(["check", str(skill)]) == 0
    assert capsys.readouterr().out.strip() == "checked 1 skill: 0 errors, 0 warnings"
    assert evals_digest(skill).startswith("sha256:")  # what eval computes: no refusal

    (tmp_path / "elsewhere.py").write_text("print('outside')\n")
    os.symlink("../../elsewhere.py", skill / "evals/outside.py")
    message = (
        f"{skill}/evals/outside.py:1: error: symlink points outside the skill "
        "(../../elsewhere.py); copy the file in instead"
    )
    assert main(["check", str(skill)]) == 1
    assert message in capsys.readouterr().out.splitlines()
    assert main(["eval", str(skill), "--model", "scripted/demo", "--no-gen"]) == 2
    assert message in capsys.readouterr().err.splitlines()


def test_front_matter_claude_code_accepts_is_read_with_a_warning(tmp_path: Path, capsys) -> None:
    skill = tmp_path / "hybrid-review"
    skill.mkdir()
    (skill / "SKILL.md").write_text(
        "---\nname: hybrid-review\n"
        "description: Review a change in two passes: first the diff, then the callers.\n"
        "---\n# Hybrid review\n"
    )
    found = read_skill(skill)
    assert found.description == "Review a change in two passes: first the diff, then the callers."
    assert main(["check", str(skill)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "checked 1 skill: 0 errors, 1 warning"
    assert out[0].startswith(f"{skill}/SKILL.md:3: warning: front matter is not valid YAML")
    assert "strict YAML readers (Codex, PyYAML, js-yaml) drop the skill: quote the value" in out[0]


@pytest.mark.parametrize(
    "bad",
    [
        "description: [unclosed, flow\n",  # broken YAML structure, not prose
        "description: Fine: text\n  nested: x\n",  # indented continuation
        "description: only a description: here\n",  # no name
    ],
)
def test_front_matter_that_is_really_broken_stays_an_error(bad: str, tmp_path: Path) -> None:
    skill = tmp_path / "demo"
    skill.mkdir()
    name = "" if "no name" in bad or "only" in bad else "name: demo\n"
    (skill / "SKILL.md").write_text(f"---\n{name}{bad}---\n")
    assert main(["check", str(skill)]) == 1


def test_junit_lists_every_row_of_a_skipped_suite(tmp_path: Path) -> None:
    tally = {"win": 2, "loss": 0, "tie": 0, "net_lift": 1.0, "sign_p": 0.5}
    summary = msgspec.convert(
        {
            "skill": "demo",
            "version": "sha256:0",
            "run_id": "r",
            "verdict": "PASS",
            "why": "w",
            "expected_rows": 12,
            "scored_rows": 4,
            "partial": True,
            "complete": True,
            "stopped": None,
            "k": 2,
            "seed": 1,
            "comparisons": {"baseline": tally, "incumbent": tally},
            "rows": [
                {
                    "case": "a",
                    "rep": r,
                    "opponent": o,
                    "outcome": "win",
                    "decided_by": "checks",
                    "arms": {},
                }
                for r in (1, 2)
                for o in ("baseline", "incumbent")
            ],
            "skipped": [
                {
                    "case": "suite",
                    "reason": "missing codex",
                    "environment": True,
                    "units": ["suite/one", "suite/two"],
                }
            ],
            "efficiency": {},
            "arm_scores": {},
            "case_runs": {},
            "agent": "builtin",
            "agent_version": "0",
            "models": {},
            "driver": "model",
        },
        Summary,
    )
    suite = ElementTree.fromstring(eval_junit(summary))
    assert (suite.get("tests"), suite.get("skipped")) == ("12", "8")
    skipped = [c.get("name") for c in suite if c.find("skipped") is not None]
    assert skipped == [
        f"suite/{u} rep {r} vs {o}"
        for u in ("one", "two")
        for r in (1, 2)
        for o in ("baseline", "incumbent")
    ]
