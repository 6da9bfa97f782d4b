"""GP1 (PARTIAL, medium; docs/ci.md): the documented gate workflow runs `on: [pull_request,
push]`. A push of the PR's branch runs the same job with GITHUB_EVENT_NAME=push and no
GITHUB_BASE_REF, so anchors.trusted_revision returns None and the gate reads the policy,
allowed_signers and receipts from the PR's own work tree (the G2-G5 attacks of issue 38 pass
there, with only a `note:` on stderr). Both runs report a check named `gate` on the PR's head
commit; whether branch protection takes the push run's success depends on how the team
configured the required check — the workflow as documented offers the attacker a passing
`gate` for their head SHA.

Expected (docs): in GitHub Actions on any event other than a push to the base branch, the gate
refuses to run from the work tree (or the documented workflow limits `push` to
`branches: [main]`). Observed: exit 0, "gate passed: greeter: PASS (run run-3, ... signed by m)".
Fix: docs/ci.md `on: {pull_request: {}, push: {branches: [main]}}`, and in Actions
(GITHUB_ACTIONS=true) without a trusted revision refuse unless GITHUB_REF is the default
branch (or require --base/--policy-from explicitly).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from skillbench.cli import main
from tests.test_gate_base_branch import base_and_pr, receipt_into
from tests.test_receipt_trust import commit, git, git_identity, keypair  # noqa: F401


def test_a_push_of_the_pr_branch_gates_on_the_prs_own_anchors(tmp_path: Path, capsys, monkeypatch):
    origin, skill = base_and_pr(capsys, tmp_path, "LLLLLT")  # main: a signed FAIL
    mine = keypair(tmp_path, "mallory")
    pub = mine.with_suffix(".pub").read_text()
    commit(origin, ".skillbench/allowed_signers", f'm namespaces="skillbench-receipt" {pub}')
    receipt_into(origin, skill, "run-3", "WWWWWW", "2026-12-01T10:00:00+00:00", mine)
    work = tmp_path / "ci"
    subprocess.run(["git", "clone", "-q", "--branch", "pr", str(origin), str(work)], check=True)
    monkeypatch.chdir(work)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    for key, value in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_REF": "refs/heads/pr",
    }.items():
        monkeypatch.setenv(key, value)
    code = main(["gate", "skills/greeter/v1", "--team", "."])
    out = capsys.readouterr().out.strip()
    assert code == 1, out  # observed: 0, passed on the PR's own key
