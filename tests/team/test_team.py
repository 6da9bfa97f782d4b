"""Receipts, publishing into a team repo, the incumbent arm, the gate, and scrubbing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from skillbench.cli import main
from skillbench.evals.skills import digest
from skillbench.team.receipts import Receipt, local_receipts, read_receipt
from tests.helpers import engine_receipt, make_skill

MODEL = "anthropic/claude-sonnet-4-6"


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(key, "skillbench tests")
    for key in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(key, "tests@skillbench.invalid")


def team_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "team"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("team skills\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "init"], check=True)
    return repo


def greeter(tmp_path: Path, body: str = "Say hello.") -> Path:
    skill = make_skill(
        tmp_path / "lib",
        "greeter",
        {"evals/cases/a.yaml": "task: Greet\nchecks: [{file_exists: g.txt}]\n"},
        description="Writes greetings.",
    )
    (skill / "SKILL.md").write_text(
        f"---\nname: greeter\ndescription: Writes greetings.\n---\n{body}\n"
    )
    return skill


# rows that give each verdict (one case each, so one unit each, against the baseline): W
# win, L loss, T tie, U unscored. PASS and FAIL need five decided units (docs/statistics.md).
ROWS = {
    "PASS": "WWWWW",
    "FAIL": "LLLLL",
    "NEUTRAL": "WWWWL",  # 4W/1L: p = 6/32, not significant
    "INCONCLUSIVE": "WWT",
    "NONE": "UUU",
}


def receipt(
    skill: Path,
    run_id: str,
    verdict: str = "PASS",
    created: str = "2026-11-29T10:00:00+00:00",
    incumbent: str | None = None,
    triggers: dict[str, Any] | None = None,
    rows: str | None = None,
    driver: str = "model",
) -> Receipt:
    """A receipt as `eval` writes it, its rows giving `verdict` (or the `rows` given)."""
    outcomes = {
        "baseline": rows or ROWS[verdict],
        **({"incumbent": incumbent} if incumbent else {}),
    }
    run_dir = engine_receipt(
        skill,
        run_id,
        outcomes,
        created=created,
        model=MODEL if driver == "model" else "scripted/demo",
        triggers=triggers,
    )
    r = read_receipt(run_dir / "receipt.json")
    assert rows is not None or r.verdict == verdict, f"ROWS[{verdict!r}] gives {r.verdict}"
    return r


def git_log(repo: Path) -> list[str]:
    return subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True, check=True
    ).stdout.splitlines()


def test_publish_versions_evals_and_receipts(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    receipt(skill, "run-1")
    assert main(["publish", str(skill), "--team", str(repo)]) == 0
    assert capsys.readouterr().out.startswith("published greeter v1 (sha256:")
    v1 = repo / "skills/greeter/v1"
    assert (v1 / "SKILL.md").is_file() and not (v1 / "evals").exists()
    assert json.loads((repo / "skills/greeter/versions.json").read_text()) == {"v1": digest(skill)}
    assert (repo / "skills/greeter/evals/cases/a.yaml").is_file()
    assert json.loads((repo / "evals/greeter/v1/run-1.json").read_text())["run_id"] == "run-1"
    assert git_log(repo)[0].startswith("publish greeter v1 (sha256:")

    # unchanged bytes: the same version, nothing to commit
    assert main(["publish", str(skill), "--team", str(repo)]) == 0
    assert "is already published; nothing to do" in capsys.readouterr().out
    assert len(git_log(repo)) == 2

    # evals change (a file removed locally, one added): added, never removed; same version
    (skill / "evals/cases/a.yaml").unlink()
    (skill / "evals/cases/b.yaml").write_text("task: Greet twice\nchecks: [{file_exists: g.txt}]\n")
    assert main(["publish", str(skill), "--team", str(repo)]) == 0
    assert "greeter v1" in capsys.readouterr().out
    assert {p.name for p in (repo / "skills/greeter/evals/cases").iterdir()} == {"a.yaml", "b.yaml"}

    # changed bytes mint v2; v1 is untouched
    (skill / "SKILL.md").write_text((skill / "SKILL.md").read_text() + "Be warm.\n")
    assert main(["publish", str(skill), "--team", str(repo)]) == 0
    assert capsys.readouterr().out.startswith("published greeter v2 (")
    assert "Be warm." not in (v1 / "SKILL.md").read_text()
    assert set(json.loads((repo / "skills/greeter/versions.json").read_text())) == {"v1", "v2"}


def test_publish_refuses_dirty_repo_and_hand_edited_version(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    assert main(["publish", str(skill), "--team", str(repo)]) == 0
    (repo / "stray.txt").write_text("x")
    assert main(["publish", str(skill), "--team", str(repo)]) == 1
    assert "has uncommitted changes" in capsys.readouterr().err
    (repo / "stray.txt").unlink()
    (repo / "skills/greeter/v1/SKILL.md").write_text("---\nname: greeter\ndescription: x\n---\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "sneaky edit"], check=True)
    assert main(["publish", str(skill), "--team", str(repo)]) == 1
    assert "no longer match the digest recorded" in capsys.readouterr().err
    assert main(["publish", str(skill), "--team", str(tmp_path / "nope")]) == 1
    assert "not a git work tree" in capsys.readouterr().err


def gate(capsys, skill: Path, repo: Path | None, *flags: str) -> tuple[int, str]:
    code = main(["gate", str(skill), *(["--team", str(repo)] if repo else []), *flags])
    return code, capsys.readouterr().out.strip()


def test_gate_pass_and_each_refusal(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    code, out = gate(capsys, skill, repo)
    assert code == 1 and out.startswith("gate refused: greeter: no receipt for sha256:")

    receipt(skill, "run-1", "PASS", triggers={"recall": 0.6, "precision": 1.0})
    code, out = gate(capsys, skill, repo, "--junit", str(tmp_path / "gate.xml"))
    assert (code, out) == (0, "gate passed: greeter: PASS (run run-1, 5/5 rows scored)")
    assert 'failures="0"' in (tmp_path / "gate.xml").read_text()

    code, out = gate(
        capsys, skill, repo, "--min-recall", "0.8", "--junit", str(tmp_path / "gate.xml")
    )
    assert (code, out) == (1, "gate refused: greeter: trigger recall 0.60 is under 0.80")
    assert (
        '<failure message="trigger recall 0.60 is under 0.80"/>'
        in (tmp_path / "gate.xml").read_text()
    )

    # the newest receipt for the exact bytes decides
    receipt(skill, "run-2", "FAIL", created="2026-11-29T11:00:00+00:00")
    code, out = gate(capsys, skill, repo)
    assert (code, out) == (
        1,
        "gate refused: greeter: verdict vs baseline is FAIL (policy requires NEUTRAL)",
    )

    receipt(skill, "run-3", "NEUTRAL", created="2026-11-29T12:00:00+00:00")
    assert gate(capsys, skill, repo)[0] == 0
    code, out = gate(capsys, skill, repo, "--require", "PASS")
    assert (code, out) == (
        1,
        "gate refused: greeter: verdict vs baseline is NEUTRAL (policy requires PASS)",
    )

    receipt(
        skill,
        "run-4",
        "PASS",
        created="2026-11-29T13:00:00+00:00",
        incumbent="LLLLL",  # five lost units: FAIL (p = 1/32)
        triggers={"recall": 1.0, "precision": None},
    )
    code, out = gate(capsys, skill, repo)
    assert (code, out) == (
        1,
        "gate refused: greeter: FAIL vs the incumbent (the published version does better)",
    )
    assert gate(capsys, skill, repo, "--allow-incumbent-fail")[0] == 0
    code, out = gate(capsys, skill, repo, "--allow-incumbent-fail", "--min-precision", "0.5")
    assert (code, out) == (1, "gate refused: greeter: trigger precision n/a is under 0.50")

    # policy from the team repo's pyproject.toml
    (repo / "pyproject.toml").write_text(
        "[tool.skillbench.gate]\nallow-incumbent-fail = true\nmin-recall = 0.9\n"
    )
    assert gate(capsys, skill, repo) == (
        0,
        "gate passed: greeter: PASS (run run-4, 10/10 rows scored)",  # two opponents
    )

    # a local skillbench.toml [gate] table overrides the team repo's policy
    (skill.parent.parent / "skillbench.toml").write_text("[gate]\nmin-recall = 1.5\n")
    code, out = gate(capsys, skill, repo)
    assert (code, out) == (1, "gate refused: greeter: trigger recall 1.00 is under 1.50")
    (skill.parent.parent / "skillbench.toml").unlink()

    # any change to the bytes leaves no receipt
    (skill / "SKILL.md").write_text((skill / "SKILL.md").read_text() + "changed\n")
    code, out = gate(capsys, skill, repo)
    assert code == 1 and "no receipt for" in out


def test_gate_refuses_inconclusive_unless_the_policy_allows_it(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    receipt(skill, "run-1", "INCONCLUSIVE")  # two decided units
    code, out = gate(capsys, skill, repo)
    assert (code, out) == (
        1,
        "gate refused: greeter: verdict vs baseline is INCONCLUSIVE: 2 decided unit(s), and no "
        "verdict rests on fewer than 5; add cases (or --k for flaky ones), or set "
        "allow-inconclusive = true",
    )
    assert gate(capsys, skill, repo, "--allow-inconclusive") == (
        0,
        "gate passed: greeter: INCONCLUSIVE (run run-1, 3/3 rows scored)",
    )
    code, out = gate(capsys, skill, repo, "--allow-inconclusive", "--require", "PASS")
    assert (code, out) == (
        1,
        "gate refused: greeter: verdict vs baseline is INCONCLUSIVE (policy requires PASS)",
    )
    (repo / "pyproject.toml").write_text("[tool.skillbench.gate]\nallow-inconclusive = true\n")
    assert gate(capsys, skill, repo)[0] == 0
    # an incumbent comparison on too few units is no FAIL either
    (repo / "pyproject.toml").unlink()
    receipt(skill, "run-2", "PASS", created="2026-11-29T11:00:00+00:00", incumbent="LLLLT")
    assert gate(capsys, skill, repo) == (
        0,
        "gate passed: greeter: PASS (run run-2, 10/10 rows scored)",
    )


def test_gate_only_accepts_real_complete_measurements(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    receipt(skill, "run-1", "FAIL")
    # a later run that scored nothing (--max-cost 0, an outage, a killed sandbox) is newer...
    receipt(skill, "run-2", "NONE", created="2026-11-29T11:00:00+00:00")
    code, out = gate(capsys, skill, repo)
    # ...but never shadows the measured FAIL
    assert (code, out) == (
        1,
        "gate refused: greeter: verdict vs baseline is FAIL (policy requires NEUTRAL)",
    )

    # a scripted driver's receipt says the pipeline works, not that the skill helps
    receipt(skill, "run-3", "PASS", created="2026-11-29T12:00:00+00:00", driver="scripted")
    code, out = gate(capsys, skill, repo)
    assert code == 1 and "(run run-3) comes from the scripted driver (scripted/demo)" in out

    # a partial run is refused unless the policy allows it
    receipt(skill, "run-4", "PASS", created="2026-11-29T13:00:00+00:00", rows="WWWWWU")
    code, out = gate(capsys, skill, repo)
    assert (code, out) == (
        1,
        "gate refused: greeter: the newest measured receipt (run run-4) "
        "is incomplete: 5/6 rows scored; resume or rerun the eval, or set "
        "allow-partial = true",
    )
    assert gate(capsys, skill, repo, "--allow-partial") == (
        0,
        "gate passed: greeter: PASS (run run-4, 5/6 rows scored)",
    )


def test_gate_can_require_an_agent(tmp_path: Path, capsys) -> None:
    skill = greeter(tmp_path)
    receipt(skill, "run-1")  # measured by the builtin loop
    code, out = gate(capsys, skill, None)
    assert code == 0
    (skill.parent.parent / "skillbench.toml").write_text('[gate]\nrequire-agent = "claude-code"\n')
    code, out = gate(capsys, skill, None)
    assert (code, out) == (
        1,
        "gate refused: greeter: measured with agent builtin (policy requires claude-code)",
    )


def test_gate_can_require_the_trigger_method(tmp_path: Path, capsys) -> None:
    skill = greeter(tmp_path)
    counts = {"recall": 0.9, "precision": 1.0, "tp": 9, "fn": 1, "fp": 0, "tn": 5}
    receipt(skill, "run-1", triggers={"method": "catalog call", "invalid": None, **counts})
    assert gate(capsys, skill, None, "--min-recall", "0.8")[0] == 0
    (skill.parent.parent / "skillbench.toml").write_text('[gate]\ntrigger-method = "agent"\n')
    code, out = gate(capsys, skill, None)
    assert (code, out) == (
        1,
        "gate refused: greeter: triggers measured by catalog call (policy "
        'requires trigger-method = "agent")',
    )
    receipt(
        skill,
        "run-2",
        created="2026-11-29T11:00:00+00:00",
        triggers={"method": "agent codex", "invalid": None, **counts},
    )
    assert gate(capsys, skill, None)[0] == 0
    # an invalid measurement (the canary did not fire) never passes a trigger floor
    receipt(
        skill,
        "run-3",
        created="2026-11-29T12:00:00+00:00",
        triggers={
            "method": "agent codex",
            "invalid": "the canary did not fire",
            **counts,
            "recall": None,
            "precision": None,
        },
    )
    code, out = gate(capsys, skill, None, "--min-recall", "0.8")
    assert code == 1 and "the trigger measurement is invalid: the canary did not fire" in out
    assert "trigger recall n/a is under 0.80" in out


def test_gate_can_require_power(tmp_path: Path, capsys) -> None:
    skill = greeter(tmp_path)
    receipt(skill, "run-1", rows="WWWWL")  # NEUTRAL on 5 decided units; 8 needed at 80 %
    assert gate(capsys, skill, None)[0] == 0  # not asked for: the NEUTRAL passes
    code, out = gate(capsys, skill, None, "--require-power")
    assert (code, out) == (
        1,
        "gate refused: greeter: underpowered: 5 decided units, 8 needed for p <= 0.05",
    )
    receipt(skill, "run-2", created="2026-11-29T11:00:00+00:00", rows="WWWWWW")  # 6 decided
    assert gate(capsys, skill, None, "--require-power")[0] == 0


def test_gate_refuses_when_nothing_was_ever_measured(tmp_path: Path, capsys) -> None:
    skill = greeter(tmp_path)
    receipt(skill, "run-1", "NONE")
    code, out = gate(capsys, skill, None)
    assert code == 1
    assert "measured anything: the newest (run run-1) scored 0/3 rows (verdict NONE" in out


def test_publish_leaves_scripted_and_unscored_receipts_out(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    receipt(skill, "run-1")
    receipt(skill, "run-2", "PASS", driver="scripted")
    receipt(skill, "run-3", "NONE")
    assert main(["publish", str(skill), "--team", str(repo)]) == 0
    assert "1 receipt(s) (2 scripted or unscored left out)" in capsys.readouterr().out
    assert sorted(p.name for p in (repo / "evals/greeter/v1").iterdir()) == ["run-1.json"]


def test_receipts_listing(tmp_path: Path, capsys) -> None:
    skill = greeter(tmp_path)
    receipt(skill, "run-1")
    assert main(["receipts", str(skill)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"* {digest(skill)[:19]}  2026-11-29T10:00:00+00:00  run-1  PASS")
    assert out[-1] == "(* = the skill's current bytes)"


# --- end to end: the incumbent arm, receipts and scrubbing ---------------------------------


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_incumbent_arm_receipt_and_scrubbing(fake, tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path, body="OLD-VERSION: say hello.")
    receipt(skill, "run-0")
    assert main(["publish", str(skill), "--team", str(repo)]) == 0
    (skill / "SKILL.md").write_text(
        "---\nname: greeter\ndescription: Writes greetings.\n---\nNEW-VERSION\n"
    )
    # each credential as written, and the part of it that must never reach a file
    secrets = {
        "sk-ant-api03-AAAABBBBCCCCDDDD1234": "AAAABBBBCCCCDDDD1234",
        "sk-proj-abcdefghijklmnopqrstuv123456": "abcdefghijklmnopqrstuv123456",
        "AKIAIOSFODNN7EXAMPLE": "AKIAIOSFODNN7EXAMPLE",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789": "abcdefghijklmnopqrstuvwxyz0123456789",
        "Bearer abcdefghijklmnop.qrstuvwx": "abcdefghijklmnop.qrstuvwx",
        "password=hunter2hunter2": "hunter2hunter2",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----": "MIIEowIBAAKCAQEA",
    }
    leak = " ".join(secrets)
    fake(
        {
            "conversations": [
                {
                    "when": "(?s)Skills available.*Greet",
                    "steps": [
                        {"tool_calls": [{"skill": {"name": "greeter"}}]},
                        {
                            "tool_calls": [
                                {"bash": {"command": "echo 'AKIAIOSFODNN7EXAMPLE' > g.txt"}}
                            ]
                        },
                        {"text": f"done; my notes: {leak}"},
                    ],
                },
                {"when": "(?s)No skills are available.*Greet", "steps": [{"text": "no"}]},
            ]
        }
    )
    out = tmp_path / "run"
    code = main(
        [
            "eval",
            str(skill),
            "--model",
            MODEL,
            "--team",
            str(repo),
            "--out",
            str(out),
            "--quiet",
            "--no-gen",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 3  # one case: INCONCLUSIVE
    plan = json.loads((out / "plan.json").read_text())
    assert plan["arms"] == ["baseline", "candidate", "incumbent"]
    assert plan["incumbent"]["version"] == "v1"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["comparisons"]["incumbent"]["tie"] == 1  # both staged versions pass
    assert summary["verdict"] == "INCONCLUSIVE"  # still decided against the baseline
    assert any(
        line.startswith("candidate-vs-incumbent: 0W/0L/1T rows · 0 of 1 unit decided")
        for line in lines
    )
    # each arm loaded its own version of the skill
    inc = (out / "transcripts/a.incumbent.1.jsonl").read_text()
    cand = (out / "transcripts/a.candidate.1.jsonl").read_text()
    assert "OLD-VERSION" in inc and "NEW-VERSION" not in inc
    assert "NEW-VERSION" in cand and "OLD-VERSION" not in cand
    # the receipt: in the run folder and the local store, for the new bytes
    written = json.loads((out / "receipt.json").read_text())
    assert written["digest"] == digest(skill) and written["schema_version"] == 4
    assert written["provenance"]["arms"]["incumbent"][0].endswith("(v1)")
    assert [r.run_id for _, r in local_receipts("greeter", digest(skill))] == [plan["run_id"]]
    # no credential survives in anything written
    for path in [*out.rglob("*.json"), *out.rglob("*.jsonl")]:
        text = path.read_text()
        for core in secrets.values():
            assert core not in text, (core, path)
    assert "[REDACTED]" in cand


def test_gate_takes_a_published_version_folder(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    receipt(skill, "run-1")
    assert main(["publish", str(skill), "--team", str(repo)]) == 0
    capsys.readouterr()
    code, out = gate(capsys, repo / "skills/greeter/v1", repo)
    assert (code, out) == (0, "gate passed: greeter: PASS (run run-1, 5/5 rows scored)")
