"""GT1 (BROKEN): a tag named like the base branch's remote ref replaces the base revision.

The gate resolves `--base origin/main` (and the CI default `origin/$GITHUB_BASE_REF`) with
`git rev-parse --verify origin/main^{commit}`. git's ref lookup order (gitrevisions(7)) tries
`refs/tags/origin/main` BEFORE `refs/remotes/origin/main`, so a collaborator who can push a
tag (tags are rarely protected; actions/checkout with fetch-depth 0 fetches every tag) pushes
`origin/main` -> their own PR commit. The merge base of HEAD with that commit is the PR
commit itself, so the "trusted" policy, allowed_signers and receipts are the PR's own.

Expected: gate refused (the real origin/main has a newer signed FAIL and only the CI key).
Observed: `gate passed: greeter: PASS (run run-3, ... signed by m)` — the PR's own key.
The same holds for `--policy-from main` / `--base main` with a tag named `main`
(refs/tags/main wins over refs/heads/main; git only warns "refname is ambiguous").
Fix: resolve fully qualified refs (`refs/remotes/origin/<base>`), and refuse an ambiguous
name (`git rev-parse --symbolic-full-name` / check `refs/tags/<name>` does not exist).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from skillbench.cli import main
from tests.test_gate_base_branch import base_and_pr, receipt_into
from tests.test_receipt_trust import (
    commit,
    git,
    git_identity,  # noqa: F401  (autouse fixture)
    keypair,
)


def test_a_pushed_tag_named_origin_main_becomes_the_base(tmp_path: Path, capsys, monkeypatch):
    origin, skill = base_and_pr(capsys, tmp_path, "WWWWWW")  # main: signed PASS run-1
    ci = tmp_path / "keys" / "ci"
    git(origin, "checkout", "-q", "main")
    receipt_into(origin, skill, "run-2", "LLLLLT", "2026-11-30T10:00:00+00:00", ci)
    # the attacker's PR branch: merges main, trusts their key, drops the FAIL, signs a PASS
    git(origin, "checkout", "-q", "pr")
    git(origin, "merge", "-q", "main")
    mine = keypair(tmp_path, "mallory")
    pub = mine.with_suffix(".pub").read_text()
    commit(origin, ".skillbench/allowed_signers", f'm namespaces="skillbench-receipt" {pub}')
    git(origin, "rm", "-q", "evals/greeter/v1/run-2.json")
    git(origin, "commit", "-qm", "drop the FAIL")
    receipt_into(origin, skill, "run-3", "WWWWWW", "2026-12-01T10:00:00+00:00", mine)
    # ... and pushes one tag (no write to main needed)
    git(origin, "tag", "origin/main", "pr")
    work = tmp_path / "ci"
    subprocess.run(["git", "clone", "-q", "--branch", "pr", str(origin), str(work)], check=True)
    git(work, "fetch", "-q", "--tags", "origin")
    monkeypatch.chdir(work)
    documented = ["gate", "skills/greeter/v1", "--team", "."]
    for how in ({"GITHUB_BASE_REF": "main"}, None):
        if how:
            monkeypatch.setenv("GITHUB_BASE_REF", "main")
            code = main(documented)
        else:
            monkeypatch.delenv("GITHUB_BASE_REF")
            code = main([*documented, "--base", "origin/main"])
        out = capsys.readouterr().out.strip()
        # expected: refused, FAIL vs baseline (origin/main's signed run-2)
        assert code == 1, out
        assert "FAIL" in out, out
