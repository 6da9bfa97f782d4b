"""The revision the gate's trust anchors come from: the gate policy, `allowed_signers` and the
receipts a pull request may not remove are read with `git show REF:path` from a revision the PR
cannot change (its merge base with the base branch), never from the PR's checkout. See
docs/ci.md, "Where the policy comes from"."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import msgspec

from skillbench.inputs import MAX_JSON
from skillbench.team import TeamError


class Revision(msgspec.Struct, frozen=True):
    repo: Path
    ref: str  # as the user (or CI) named it, for messages
    commit: str


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True)


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    lines = done.stderr.decode(errors="replace").splitlines()
    return "; ".join(line.strip() for line in lines if line.strip()) or "no output"


def _commit(repo: Path, ref: str, flag: str) -> str:
    done = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if done.returncode != 0:
        raise TeamError(
            f"{flag} {ref}: no such commit in {repo} (fetch it first, e.g. "
            "`git fetch origin <branch>`, with enough depth for the merge base)"
        )
    return done.stdout.decode().strip()


def trusted_revision(
    repo: Path | None, policy_from: str | None, base: str | None
) -> Revision | None:
    """The revision named by --policy-from, else the merge base of HEAD with --base (or, in
    GitHub Actions on a pull request, with origin/$GITHUB_BASE_REF); None outside CI without
    either flag (the work tree's files are used, as before)."""
    if policy_from and base:
        raise TeamError("give --policy-from REF or --base BRANCH, not both")
    flag = "--policy-from" if policy_from else "--base"
    if not base and not policy_from and os.environ.get("GITHUB_BASE_REF"):
        base, flag = f"origin/{os.environ['GITHUB_BASE_REF']}", "GITHUB_BASE_REF:"
    if not policy_from and not base:
        return None
    if repo is None:
        raise TeamError(f"{flag} needs the team repo (--team REPO) to read the policy from")
    if policy_from:
        return Revision(repo, policy_from, _commit(repo, policy_from, flag))
    assert base is not None
    tip = _commit(repo, base, flag)
    done = _git(repo, "merge-base", "HEAD", tip)
    if done.returncode != 0:
        raise TeamError(
            f"{flag} {base}: no merge base with HEAD in {repo} ({_said(done)}); fetch more "
            "history (actions/checkout with fetch-depth: 0)"
        )
    return Revision(repo, f"merge-base(HEAD, {base})", done.stdout.decode().strip())


def show(rev: Revision, rel: str | Path) -> bytes | None:
    """The bytes of `rel` at the revision; None when the revision has no such file."""
    path = Path(rel).as_posix()
    kind = _git(rev.repo, "cat-file", "-t", f"{rev.commit}:{path}")
    if kind.returncode != 0 or kind.stdout.strip() != b"blob":
        return None
    size = _git(rev.repo, "cat-file", "-s", f"{rev.commit}:{path}")
    if int(size.stdout or 0) > MAX_JSON:
        raise TeamError(f"{rev.ref}:{path}: larger than {MAX_JSON} bytes: too large to read")
    done = _git(rev.repo, "show", f"{rev.commit}:{path}")
    if done.returncode != 0:
        raise TeamError(f"git show {rev.ref}:{path} failed: {_said(done)}")
    return done.stdout


def files_under(rev: Revision, folder: str) -> list[str]:
    """The paths of the files under `folder` at the revision, sorted."""
    done = _git(rev.repo, "ls-tree", "-r", "-z", "--name-only", rev.commit, "--", folder)
    if done.returncode != 0:
        raise TeamError(f"git ls-tree {rev.ref} {folder} failed: {_said(done)}")
    return sorted(p.decode(errors="surrogateescape") for p in done.stdout.split(b"\0") if p)
