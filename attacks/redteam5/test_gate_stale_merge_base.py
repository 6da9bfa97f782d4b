"""RT5-GT (redteam5): the gate's anchors come from merge-base(HEAD, base), and the PR picks
its own fork point. A PR branched before the base branch revoked a key (or recorded a FAIL)
and never merged since is gated on the old allowed_signers and receipts: a receipt signed by
the revoked key passes, though the PR would merge into a main that no longer trusts it.
(anchors.trusted_revision; docs/trust.md "Trust anchors", docs/ci.md.)

Mitigated in GitHub Actions' default pull_request checkout (HEAD is the merge commit with the
base tip, so the merge base is the tip); open for `--base` locally (the pre-push hook), for a
workflow that checks out the PR head (`ref: ${{ github.head_ref }}`, pull_request_target), and
in other CI systems, where docs/ci.md says to pass `--base origin/<target>`.

Run: PYTHONPATH=. .venv/bin/pytest attacks/redteam5/test_gate_stale_merge_base.py
Expected: 1 and the FAIL refusal. Observed: 0, "gate passed: greeter: PASS (run run-3 ...)".
"""

from __future__ import annotations

from pathlib import Path

from tests.test_gate_base_branch import base_and_pr, gate, receipt_into
from tests.test_receipt_trust import commit, git, git_identity, keypair  # noqa: F401


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
