"""The gate over cells (issue 35): receipts for one skill's bytes from several agents × models,
each cell decided on its own newest receipt; require-cells, allow-neutral-cells, and a pull
request that drops a failing cell by deleting its receipt (on a real git team repo)."""

from __future__ import annotations

import shutil
from pathlib import Path

from skillbench.cli import main
from skillbench.evals.skills import digest
from skillbench.team.receipts import store_dir
from tests.helpers import engine_receipt
from tests.security.test_receipt_trust import commit, git, signed_team
from tests.team.test_team import ROWS, git_identity, greeter  # noqa: F401  (autouse fixture)

SONNET, HAIKU = "anthropic/claude-sonnet-4-6", "anthropic/claude-haiku-4-5"


def cell(folder: Path, run_id: str, verdict: str, agent: str, model: str, **kw) -> Path:
    return engine_receipt(
        folder, run_id, {"baseline": ROWS[verdict]}, agent=agent, model=model, **kw
    )


def gate(capsys, skill: Path, *flags: str) -> tuple[int, str]:
    code = main(["gate", str(skill), *flags])
    return code, capsys.readouterr().out.strip()


def test_the_gate_accepts_a_set_whose_cells_all_passed_and_refuses_a_failed_cell(
    tmp_path: Path, capsys
) -> None:
    skill = greeter(tmp_path)
    cell(skill, "run-1", "PASS", "claude-code", SONNET)
    cell(skill, "run-2", "PASS", "codex", SONNET)
    code, out = gate(capsys, skill)
    assert (code, out) == (
        0,
        f"gate passed: greeter: 2 cells: claude-code/{SONNET} PASS (run run-1, 5/5 rows "
        f"scored); codex/{SONNET} PASS (run run-2, 5/5 rows scored)",
    )
    # a third cell fails: the newest receipt of the other two does not hide it
    cell(skill, "run-3", "FAIL", "claude-code", HAIKU, created="2026-11-29T09:00:00+00:00")
    code, out = gate(capsys, skill)
    assert (code, out) == (
        1,
        f"gate refused: greeter: cell claude-code/{HAIKU}: verdict vs baseline is FAIL "
        "(policy requires NEUTRAL)",
    )
    # its newer PASS decides that cell again
    cell(skill, "run-4", "PASS", "claude-code", HAIKU, created="2026-11-29T11:00:00+00:00")
    assert gate(capsys, skill)[0] == 0


def test_require_cells_names_the_cells_that_must_pass(tmp_path: Path, capsys) -> None:
    skill = greeter(tmp_path)
    cell(skill, "run-1", "PASS", "claude-code", SONNET)
    cell(skill, "run-2", "FAIL", "codex", SONNET)
    assert gate(capsys, skill)[0] == 1
    # only Claude Code's cells are required: codex's FAIL is reported elsewhere, not gated
    code, out = gate(capsys, skill, "--require-cell", "claude-code/*")
    assert (code, out) == (0, "gate passed: greeter: PASS (run run-1, 5/5 rows scored)")
    # a required cell without any receipt for these bytes is a refusal naming it
    code, out = gate(
        capsys, skill, "--require-cell", "claude-code/*", "--require-cell", "*/" + HAIKU
    )
    assert code == 1 and out.startswith(
        f"gate refused: greeter: required cell */{HAIKU} has no receipt for {digest(skill)[:19]}"
    )
    # from the config's [gate] table too, and a pattern that is not agent/model is one line
    (skill.parent.parent / "skillbench.toml").write_text('[gate]\nrequire-cells = ["codex"]\n')
    code = main(["gate", str(skill)])
    err = capsys.readouterr().err
    assert code == 2 and "require-cells entry 'codex' is not agent/model" in err
    assert "Traceback" not in err
    # an empty list would gate nothing: refused, never a pass
    (skill.parent.parent / "skillbench.toml").write_text("[gate]\nrequire-cells = []\n")
    assert main(["gate", str(skill)]) == 2
    assert "require-cells is empty" in capsys.readouterr().err


def test_allow_neutral_cells_lets_a_neutral_cell_pass_beside_a_passing_one(
    tmp_path: Path, capsys
) -> None:
    skill = greeter(tmp_path)
    cell(skill, "run-1", "PASS", "claude-code", SONNET)
    cell(skill, "run-2", "NEUTRAL", "claude-code", HAIKU)
    code, out = gate(capsys, skill, "--require", "PASS")
    assert (code, out) == (
        1,
        f"gate refused: greeter: cell claude-code/{HAIKU}: verdict vs baseline is NEUTRAL "
        "(policy requires PASS)",
    )
    assert gate(capsys, skill, "--require", "PASS", "--allow-neutral-cells")[0] == 0
    # ...but not where no cell passes
    shutil.rmtree(store_dir("greeter", digest(skill)))
    cell(skill, "run-3", "NEUTRAL", "claude-code", SONNET)
    cell(skill, "run-4", "NEUTRAL", "claude-code", HAIKU)
    code, out = gate(capsys, skill, "--require", "PASS", "--allow-neutral-cells")
    assert code == 1 and "no required cell is PASS" in out


def test_a_pr_cannot_drop_a_failing_cell_by_deleting_its_receipt(tmp_path: Path, capsys) -> None:
    """The base branch holds a signed PASS for one cell and a signed FAIL for another; the PR
    deletes the FAIL's receipt. Read from the work tree the attack succeeds; from the base
    (--base main) the base's receipt still counts and the cell is refused by name."""
    repo, skill, _ = signed_team(capsys, tmp_path, "WWWWW")  # builtin/sonnet: a signed PASS
    ci = tmp_path / "keys" / "ci"
    run = cell(skill, "run-2", "FAIL", "codex", SONNET, sign_key=ci)
    commit(repo, "evals/greeter/v1/run-2.json", (run / "receipt.json").read_text())
    shutil.rmtree(store_dir("greeter", digest(skill)))
    git(repo, "branch", "-M", "main")
    git(repo, "checkout", "-qb", "pr")
    published = repo / "skills/greeter/v1"
    assert gate(capsys, published, "--team", str(repo), "--base", "main")[0] == 1
    git(repo, "rm", "-q", "evals/greeter/v1/run-2.json")
    git(repo, "commit", "-qm", "drop the failing cell")
    assert gate(capsys, published, "--team", str(repo))[0] == 0  # the attack succeeds
    code, out = gate(capsys, published, "--team", str(repo), "--base", "main")
    assert (code, out) == (
        1,
        f"gate refused: greeter: cell codex/{SONNET}: verdict vs baseline is FAIL "
        "(policy requires NEUTRAL)",
    )


def test_publish_of_a_library_publishes_the_skills_that_pass_and_reports_the_others(
    tmp_path: Path, capsys
) -> None:
    from tests.helpers import make_skill
    from tests.team.test_team import team_repo

    repo, greeting = team_repo(tmp_path), greeter(tmp_path)
    parting = make_skill(
        tmp_path / "lib",
        "farewell",
        {"evals/cases/a.yaml": "task: Part\nchecks: [{file_exists: f.txt}]\n"},
        description="Says goodbye.",
    )
    cell(greeting, "run-1", "PASS", "claude-code", SONNET)
    cell(greeting, "run-2", "PASS", "codex", SONNET)
    cell(parting, "run-3", "PASS", "claude-code", SONNET, skill="farewell")
    cell(parting, "run-4", "FAIL", "codex", SONNET, skill="farewell")
    code = main(["publish", str(tmp_path / "lib"), "--team", str(repo)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert lines[0].startswith("published greeter v1 (sha256:")
    assert lines[1] == (
        f"not published: farewell: the gate refused it: cell codex/{SONNET}: verdict vs "
        "baseline is FAIL (policy requires NEUTRAL)"
    )
    assert lines[2] == f"published 1 of 2 skills of {tmp_path / 'lib'}; 1 not"
    assert (repo / "skills/greeter/v1/SKILL.md").is_file()
    assert sorted(p.name for p in (repo / "evals/greeter/v1").iterdir()) == [
        "run-1.json",
        "run-2.json",
    ]
    assert not (repo / "skills/farewell").exists() and not (repo / "evals/farewell").exists()


def test_a_receipt_whose_cell_is_ambiguous_is_refused(tmp_path: Path, capsys) -> None:
    """The cell a receipt is gated as is its agent and model; a receipt whose top-level agent
    or model says one thing and its provenance another could be counted in either cell."""
    import json

    skill = greeter(tmp_path)
    cell(skill, "run-1", "PASS", "claude-code", SONNET)
    (stored,) = store_dir("greeter", digest(skill)).glob("*.json")
    data = json.loads(stored.read_text())
    assert data["provenance"]["agent"] == "claude-code"  # the provenance names the agent
    data["models"]["agent"] = HAIKU
    stored.write_text(json.dumps(data))
    code, out = gate(capsys, skill)
    assert (code, out) == (
        1,
        f"gate refused: greeter: the newest measured receipt (run run-1) names model {HAIKU} "
        f"but its provenance {SONNET}",
    )
    data["models"]["agent"] = SONNET
    data["agent"] = "codex"
    stored.write_text(json.dumps(data))
    assert gate(capsys, skill)[1] == (
        "gate refused: greeter: the newest measured receipt (run run-1) names agent codex but "
        "its provenance claude-code"
    )
