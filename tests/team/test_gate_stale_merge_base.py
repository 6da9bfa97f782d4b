"""RT5-GT (redteam5): the gate read allowed_signers from merge-base(HEAD, base), and the PR
picks its fork point: a PR forked before main revoked a key was gated on the old signers. The
policy and allowed_signers now come from the base branch's tip (docs/ci.md)."""

from __future__ import annotations

from pathlib import Path

from tests.security.test_receipt_trust import commit, git, git_identity, keypair  # noqa: F401
from tests.team.test_gate_base_branch import base_and_pr, gate, receipt_into


def test_a_pr_forked_before_a_key_was_revoked_is_gated_on_the_old_signers(
    tmp_path: Path, capsys
) -> None:
    repo, skill = base_and_pr(capsys, tmp_path, "LLLLLT")  # main: a signed FAIL
    git(repo, "checkout", "-q", "main")
    mallory = keypair(tmp_path, "mallory")
    signers = repo / ".skillbench/allowed_signers"
    before = signers.read_text()
    pub = mallory.with_suffix(".pub").read_text()
    commit(repo, ".skillbench/allowed_signers", before + f'm namespaces="skillbench-receipt" {pub}')
    git(repo, "checkout", "-q", "-B", "stale")  # the PR forks here
    git(repo, "checkout", "-q", "main")
    commit(repo, ".skillbench/allowed_signers", before)  # main revokes mallory's key
    git(repo, "checkout", "-q", "stale")
    receipt_into(repo, skill, "run-3", "WWWWWW", "2026-12-01T10:00:00+00:00", mallory)
    code, out, _ = gate(capsys, repo, "--base", "main")
    assert code == 1, out
    assert "gate refused" in out, out
