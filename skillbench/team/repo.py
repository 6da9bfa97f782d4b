"""The team repo (docs/results.md): published versions, their evals and receipts (the gate that
reads them is team/gate.py).

skills/<name>/v<N>/**            immutable: identical bytes reuse the version
skills/<name>/versions.json      {"v1": "sha256:..."}: what each version folder must hash to
skills/<name>/evals/**           mutable: files are added or modified, never removed
evals/<name>/v<N>/<run_id>.json  receipts
.skillbench/allowed_signers      optional: who may sign receipts (git's allowed_signers format);
                                 when present the gate accepts only receipts signed by them
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

from skillbench.errors import SkillbenchError
from skillbench.evals.skills import VERSION_RE, Skill, copy_files, digest, read_skill, skill_files
from skillbench.results.verdict import NONE
from skillbench.team.receipts import (
    Receipt,
    inconsistency,
    local_receipts,
    read_receipt,
    signed,
    signed_message,
)
from skillbench.team.signing import SigningError
from skillbench.util.inputs import InputError, load_json

SIGNERS = Path(".skillbench/allowed_signers")  # in the team repo
PUBLISH_WAIT = 120.0  # seconds a publish waits for another one in the same team repo


class TeamError(SkillbenchError):
    """The team repo refuses the operation; the message says why and what to do."""


class Version(msgspec.Struct, frozen=True):
    name: str  # v3
    number: int
    path: str
    digest: str


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        said = "; ".join(line.strip() for line in done.stderr.splitlines() if line.strip())
        raise TeamError(f"git {args[0]} failed in {repo}: {said}")
    return done.stdout


def _index(path: Path) -> dict[str, str]:
    try:
        return load_json(path, dict[str, str]) if path.exists() else {}
    except InputError as exc:
        raise TeamError(f"{exc}; restore it from git") from None


def check_repo(repo: Path) -> None:
    """A git work tree with no uncommitted changes."""
    if not (repo / ".git").exists():
        raise TeamError(f"{repo}: not a git work tree (run `git init` there first)")
    dirty = _git(repo, "status", "--porcelain").splitlines()
    if dirty:
        shown = ", ".join(line[3:] for line in dirty[:3]) + (", ..." if len(dirty) > 3 else "")
        raise TeamError(f"{repo}: has uncommitted changes ({shown}); commit or stash them first")


def versions(repo: Path, name: str) -> list[Version]:
    """The published versions of a skill, checked against versions.json (oldest first)."""
    folder = repo / "skills" / name
    index_path = folder / "versions.json"
    index = _index(index_path)
    found = []
    for child in sorted(folder.iterdir()) if folder.is_dir() else []:
        match = VERSION_RE.match(child.name)
        if not match or not child.is_dir():
            continue
        actual = digest(child)
        if index.get(child.name) != actual:
            raise TeamError(
                f"{child}: its files no longer match the digest recorded in {index_path} "
                "(edited by hand?); published versions are immutable, restore it with "
                f"`git -C {repo} checkout -- {child.relative_to(repo)}`"
            )
        found.append(Version(child.name, int(match.group(1)), str(child), actual))
    return sorted(found, key=lambda v: v.number)


def receipts_of(repo: Path, name: str, version: str) -> list[Receipt]:
    folder = repo / "evals" / name / version
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            out.append(read_receipt(path))
        except (OSError, msgspec.DecodeError):
            continue
    return sorted(out, key=lambda r: (r.provenance.created_at, r.run_id))


def incumbent(repo: Path, name: str, current: str) -> Version | None:
    """The newest published version with a receipt whose bytes differ from `current`."""
    for version in reversed(versions(repo, name)):
        if version.digest != current and receipts_of(repo, name, version.name):
            return version
    return None


@contextlib.contextmanager
def _locked(repo: Path, wait: float = PUBLISH_WAIT) -> Iterator[None]:
    """One publish at a time in a team repo: an flock on a file in its git folder (never in
    the work tree, so never committed); a second publish waits its turn."""
    if not (repo / ".git").exists():
        check_repo(repo)  # (says it is not a git work tree)
    git_dir = Path(_git(repo, "rev-parse", "--absolute-git-dir").strip())
    with (git_dir / "skillbench-publish.lock").open("a") as lock:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TeamError(
                        f"{repo}: another publish has held it for {wait:.0f} s; try again "
                        "when that one is done"
                    ) from None
                time.sleep(0.05)
        yield  # (closing the file releases the lock)


def _restore(repo: Path, paths: tuple[str, ...]) -> None:
    """Put the skill's folders back as HEAD has them (the tree was clean when publish began):
    unstage, restore what is tracked, remove what is not."""
    present = [p for p in paths if (repo / p).exists()]
    if not present:
        return
    _git(repo, "reset", "-q", "--", *present)
    tracked = [p for p in present if _git(repo, "ls-files", "--", p).strip()]
    if tracked:
        _git(repo, "checkout", "-q", "--", *tracked)
    _git(repo, "clean", "-fdq", "--", *present)
    for path in present:  # and the skills/ or evals/ folder made for it, if now empty
        with contextlib.suppress(OSError):
            (repo / path).parent.rmdir()


def publish(skill_dir: Path, repo: Path, sign_key: Path | None = None) -> str:
    """Publish the skill's bytes, its evals and its local receipts; one commit. With
    `sign_key`, every receipt attached unsigned is signed with it. Returns a one-line account
    of what happened. Holds the repo's lock; a failure leaves it clean."""
    with _locked(repo):
        check_repo(repo)
        skill = read_skill(skill_dir)
        try:
            return _publish(skill_dir, repo, skill, sign_key)
        except BaseException as exc:
            try:
                _restore(repo, (f"skills/{skill.name}", f"evals/{skill.name}"))
            except TeamError as also:
                raise TeamError(f"{exc}; restoring the team repo failed too: {also}") from None
            if isinstance(exc, TeamError):
                raise TeamError(f"{exc}; nothing was published") from None
            raise


def _publish(skill_dir: Path, repo: Path, skill: Skill, sign_key: Path | None) -> str:
    current = digest(skill_dir)
    existing = versions(repo, skill.name)
    same = next((v for v in existing if v.digest == current), None)
    version = same.name if same else f"v{max((v.number for v in existing), default=0) + 1}"
    # every receipt is read, checked and signed before anything is written: a key that
    # cannot sign leaves the repo as it was
    attach: list[tuple[Path, bytes]] = []
    left_out = underived = signed_count = 0
    for path, receipt in local_receipts(skill.name, current):
        if not measured(receipt) or receipt.driver != "model":
            left_out += 1  # a scripted or empty run says nothing a team should keep
            continue
        dest = repo / "evals" / skill.name / version / path.name
        if dest.exists():
            continue
        if inconsistency(receipt) is not None:
            underived += 1  # the gate would refuse it; a key must never vouch for it
            continue
        data = path.read_bytes()
        if sign_key is not None and signed_message(data)[1] is None:
            try:
                data = signed(data, sign_key)
            except SigningError as exc:
                raise TeamError(f"--sign-key: {exc}") from None
            signed_count += 1
        attach.append((dest, data))
    folder = repo / "skills" / skill.name
    if same is None:
        target = folder / version
        copy_files(skill_files(skill_dir), target)
        index_path = folder / "versions.json"
        index = _index(index_path)
        index[target.name] = current
        index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    evals = skill_dir / "evals"
    if evals.is_dir():  # add or modify, never remove
        shutil.copytree(evals, folder / "evals", dirs_exist_ok=True, symlinks=True)
    for dest, data in attach:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    attached = len(attach)
    paths = [p for p in (f"skills/{skill.name}", f"evals/{skill.name}") if (repo / p).exists()]
    _git(repo, "add", "-A", "--", *paths)
    if not _git(repo, "status", "--porcelain").strip():
        return f"{skill.name} {version} ({current[:19]}) is already published; nothing to do"
    what = "new version" if same is None else "same bytes as the published version"
    signing = f", {signed_count} signed" if signed_count else ""
    message = (
        f"publish {skill.name} {version} ({current[:19]})\n\n{what}; "
        f"{attached} receipt{'s' * (attached != 1)} attached{signing}"
    )
    _git(repo, "commit", "-q", "-m", message)
    notes = [f"{left_out} scripted or unscored"] if left_out else []
    notes += [f"{underived} that do not re-derive"] if underived else []
    left = f" ({' and '.join(notes)} left out)" if notes else ""
    return (
        f"published {skill.name} {version} ({current[:19]}): {what}, {attached} receipt(s)"
        f"{signing}{left}"
    )


def skill_at(folder: Path) -> Skill:
    """A skill folder, or a published version folder `skills/<name>/v<N>/`."""
    if VERSION_RE.match(folder.resolve().name):
        return read_skill(folder, folder_name=folder.resolve().parent.name)
    return read_skill(folder)


def known_receipts(name: str, repo: Path | None) -> list[tuple[str, Receipt]]:
    """Every receipt for a skill, from the team repo (if any) and the local store, oldest
    first, each with where it lives."""
    found: list[tuple[str, Receipt]] = []
    if repo is not None:
        for folder in sorted((repo / "evals" / name).glob("v*")):
            for path in sorted(folder.glob("*.json")):
                # a team receipt that does not parse is refused, not skipped: skipping a
                # corrupted newer FAIL would leave an older PASS the newest
                try:
                    found.append((str(path), read_receipt(path)))
                except (OSError, msgspec.DecodeError) as exc:
                    raise TeamError(
                        f"{path}: not a receipt skillbench writes ({exc}); restore or remove it"
                    ) from None
    found += [(str(p), r) for p, r in local_receipts(name)]
    return sorted(found, key=lambda pr: (pr[1].provenance.created_at, pr[1].run_id))


def measured(r: Receipt) -> bool:
    """The receipt scored something (its verdict is not NONE)."""
    return r.scored_rows > 0 and r.verdict != NONE
