"""How the gate names the revision its trust anchors come from (redteam4 GT1, GP1), on real
git repos: a ref is read in full, never by git's abbreviation rules (which try
refs/tags/<name> before refs/remotes/<name>), and in GitHub Actions a run that is not a pull
request reads them from the repository's default branch, never from what was pushed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from skillbench.cli import main
from tests.security.test_receipt_trust import (
    commit,
    git,
    git_identity,  # noqa: F401  (autouse fixture)
    keypair,
)
from tests.team.test_gate_base_branch import base_and_pr, receipt_into

DOCUMENTED = ["gate", "skills/greeter/v1", "--team", "."]
FAIL = "gate refused: greeter: verdict vs baseline is FAIL (policy requires NEUTRAL)"


def attacked_clone(tmp_path: Path, capsys) -> tuple[Path, Path]:
    """origin: main with a signed PASS then a newer signed FAIL; the PR branch merges main,
    trusts its author's key, drops the FAIL and signs a PASS. A CI clone of the PR: (origin,
    clone)."""
    origin, skill = base_and_pr(capsys, tmp_path, "WWWWWW")
    git(origin, "checkout", "-q", "main")
    receipt_into(
        origin, skill, "run-2", "LLLLLT", "2026-11-30T10:00:00+00:00", tmp_path / "keys/ci"
    )
    git(origin, "checkout", "-q", "pr")
    git(origin, "merge", "-q", "main")
    mine = keypair(tmp_path, "mallory")
    pub = mine.with_suffix(".pub").read_text()
    commit(origin, ".skillbench/allowed_signers", f'm namespaces="skillbench-receipt" {pub}')
    git(origin, "rm", "-q", "evals/greeter/v1/run-2.json")
    git(origin, "commit", "-qm", "drop the FAIL")
    receipt_into(origin, skill, "run-3", "WWWWWW", "2026-12-01T10:00:00+00:00", mine)
    work = tmp_path / "ci"
    subprocess.run(["git", "clone", "-q", "--branch", "pr", str(origin), str(work)], check=True)
    return origin, work


def gated(capsys, *flags: str) -> tuple[int, str, str]:
    code = main([*DOCUMENTED, *flags])
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err.strip()


def test_a_pushed_tag_named_origin_main_never_becomes_the_base(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    origin, work = attacked_clone(tmp_path, capsys)
    git(origin, "tag", "origin/main", "pr")  # one pushed tag, no write to main
    git(work, "fetch", "-q", "--tags", "origin")
    monkeypatch.chdir(work)
    monkeypatch.setenv("GITHUB_BASE_REF", "main")  # CI's default: refs/remotes/origin/main
    assert gated(capsys)[:2] == (1, FAIL)
    monkeypatch.delenv("GITHUB_BASE_REF")
    code, out, err = gated(capsys, "--base", "origin/main")
    assert (code, out) == (2, "")
    assert err == (
        "skillbench: error: --base origin/main is ambiguous: it names refs/tags/origin/main, "
        "refs/remotes/origin/main; pass the one you mean in full, e.g. --base "
        "refs/remotes/origin/main"
    )
    assert gated(capsys, "--base", "refs/remotes/origin/main")[:2] == (1, FAIL)
    # without the remote branch fetched, the tag alone is not taken for it either
    git(work, "update-ref", "-d", "refs/remotes/origin/main")
    code, _, err = gated(capsys, "--base", "origin/main")
    assert code == 2
    assert err == (
        "skillbench: error: --base origin/main is refs/tags/origin/main, not a branch; pass it "
        "in full if you mean it (--base refs/tags/origin/main), or fetch the branch"
    )
    # a tag named like the full ref (refs/tags/refs/remotes/origin/main) is no stand-in
    git(work, "tag", "refs/remotes/origin/main", "HEAD")
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    code, _, err = gated(capsys)
    assert code == 2
    assert err.startswith("skillbench: error: GITHUB_BASE_REF: origin/main: no such commit in")


@pytest.mark.parametrize("flag", ["--policy-from", "--base"])
def test_a_tag_named_main_is_ambiguous_with_the_branch(tmp_path: Path, capsys, flag) -> None:
    origin, _ = attacked_clone(tmp_path, capsys)
    git(origin, "tag", "main", "pr")
    skill = str(origin / "skills/greeter/v1")
    code = main(["gate", skill, "--team", str(origin), flag, "main"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == (
        f"skillbench: error: {flag} main is ambiguous: it names refs/tags/main, "
        f"refs/heads/main; pass the one you mean in full, e.g. {flag} refs/heads/main"
    )
    code = main(["gate", skill, "--team", str(origin), flag, "refs/heads/main"])
    assert (code, capsys.readouterr().out.strip()) == (1, FAIL)
    # a commit id is taken as one, a prefix of one too
    tip = git(origin, "rev-parse", "refs/heads/main").strip()
    for named in (tip, tip[:12]):
        code = main(["gate", skill, "--team", str(origin), flag, named])
        assert (code, capsys.readouterr().out.strip()) == (1, FAIL)


def event(tmp_path: Path, payload: object) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    return str(path)


def test_a_push_of_the_pr_branch_gates_on_the_default_branch(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    _, work = attacked_clone(tmp_path, capsys)
    monkeypatch.chdir(work)
    for key, value in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_REF": "refs/heads/pr",
    }.items():
        monkeypatch.setenv(key, value)
    # the event GitHub writes names the default branch: its merge base is what is trusted
    monkeypatch.setenv(
        "GITHUB_EVENT_PATH", event(tmp_path, {"repository": {"default_branch": "main"}})
    )
    assert gated(capsys)[:2] == (1, FAIL)
    # an honest push (main's own tip, a newer signed PASS on it) passes and says what it read
    git(work, "checkout", "-q", "-B", "main", "origin/main")
    monkeypatch.setenv("GITHUB_REF", "refs/heads/main")
    skill = work / "skills/greeter/v1"
    receipt_into(work, skill, "run-4", "WWWWWW", "2026-12-01T11:00:00+00:00", tmp_path / "keys/ci")
    git(work, "update-ref", "refs/remotes/origin/main", "HEAD")  # (as the push's checkout has it)
    code, out, err = gated(capsys)
    assert (code, out) == (
        0,
        "gate passed: greeter: PASS (run run-4, 6/6 rows scored, signed by ci@team)",
    )
    assert err == (
        "skillbench: note: policy, allowed_signers and receipts read from merge-base(HEAD, "
        "origin/main) (GitHub Actions, push of refs/heads/main: the repository's default "
        "branch main)"
    )
    # no event to name the default branch: refused in one line, never the work tree
    for path in (None, event(tmp_path, {"ref": "refs/heads/pr"})):
        if path is None:
            monkeypatch.delenv("GITHUB_EVENT_PATH")
        else:
            monkeypatch.setenv("GITHUB_EVENT_PATH", path)
        code, out, err = gated(capsys)
        assert (code, out) == (2, "")
        assert err == (
            "skillbench: error: GitHub Actions, push of refs/heads/main: no base branch to read "
            "the policy, allowed_signers and receipts from (no GITHUB_BASE_REF, and the event "
            "names no default branch); pass --base origin/<branch> (never the work tree in CI)"
        )
