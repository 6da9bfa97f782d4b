"""The revisions the gate's trust anchors come from, read with `git show REF:path`, never from
the PR's checkout: the gate policy and `allowed_signers` from the base branch's tip (a PR
picks its fork point, so the merge base could be from before a key was revoked), and the
receipts a pull request may not remove from its merge base with the base branch (what the PR
started from) and from that tip (recorded after the PR forked). See docs/ci.md, "Where the
policy comes from"."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
from pathlib import Path

import msgspec

from skillbench.team.repo import TeamError
from skillbench.util.inputs import MAX_JSON, InputError, load_json


class Revision(msgspec.Struct, frozen=True):
    repo: Path
    ref: str  # as the user (or CI) named it, for messages
    commit: str
    implied: str | None = None  # why, when no flag or pull request named it (a note)
    tip: str | None = None  # the base branch's commit, the policy's and signers' (see anchor)
    tip_shown: str = ""
    # the team repo's folder inside its git repository ("" at the top level; "team/" in a
    # monorepo): `git show REF:path` reads from the repository's root, so every path is
    # read under it, or a team one folder down would be gated on the root's (absent) anchors
    prefix: str = ""


def anchor(rev: Revision) -> Revision:
    """Where the policy and allowed_signers are read: the base branch's tip when the receipts
    come from a merge base, else the revision itself."""
    if rev.tip is None:
        return rev
    return Revision(rev.repo, rev.tip_shown, rev.tip, rev.implied, prefix=rev.prefix)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True)


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    lines = done.stderr.decode(errors="replace").splitlines()
    return "; ".join(line.strip() for line in lines if line.strip()) or "no output"


def _missing(repo: Path, name: str, flag: str) -> TeamError:
    return TeamError(
        f"{flag} {name}: no such commit in {repo} (fetch it first, e.g. "
        "`git fetch origin <branch>`, with enough depth for the merge base)"
    )


def _commit(repo: Path, full: str, flag: str, shown: str) -> str:
    """The commit of a full ref or commit id (never abbreviated: no lookup rule applies)."""
    done = _git(repo, "rev-parse", "--verify", "--quiet", f"{full}^{{commit}}")
    if done.returncode != 0:
        raise _missing(repo, shown, flag)
    return done.stdout.decode().strip()


_HEX = re.compile(r"[0-9a-f]{4,64}")
_BRANCHES = ("refs/heads/", "refs/remotes/")


def _exists(repo: Path, full: str) -> bool:
    """Whether `full` is a ref of the repo, exactly."""
    return _git(repo, "show-ref", "--verify", "--quiet", full).returncode == 0


def _commits_with_prefix(repo: Path, prefix: str) -> list[str]:
    done = _git(repo, "rev-parse", f"--disambiguate={prefix}")
    found = done.stdout.decode().split() if done.returncode == 0 else []
    return [o for o in found if _git(repo, "cat-file", "-t", o).stdout.strip() == b"commit"]


def resolve(repo: Path, name: str, flag: str, shown: str | None = None) -> str:
    """The commit `name` names, read in full. git's own lookup tries refs/tags/<name> before
    refs/remotes/<name>, so a pushed tag `origin/main` would stand in for the base branch
    (docs/trust.md). A full ref (refs/...) is taken as written; a commit id, or a prefix of
    exactly one; a short name only as a branch (refs/heads/, refs/remotes/). A short name
    that names anything else as well is refused in one line saying what to pass instead."""
    shown = shown or name
    if name.startswith("refs/"):
        if not _exists(repo, name):  # (else rev-parse would try refs/tags/refs/...)
            raise _missing(repo, shown, flag)
        return _commit(repo, name, flag, shown)
    valid = not name.startswith("-") and (
        _git(repo, "check-ref-format", "--allow-onelevel", name).returncode == 0
    )
    if not valid and not _HEX.fullmatch(name):
        raise TeamError(
            f"{flag} {name}: no such commit in {repo}: name a branch, a full ref (refs/...) "
            "or a commit id"
        )
    # every ref git's abbreviation rules could take `name` for (gitrevisions(7))
    candidates = ("refs/", "refs/tags/", "refs/heads/", "refs/remotes/")
    found = [f"{c}{name}" for c in candidates if valid and _exists(repo, f"{c}{name}")]
    if valid and _exists(repo, f"refs/remotes/{name}/HEAD"):
        found.append(f"refs/remotes/{name}/HEAD")
    commits = _commits_with_prefix(repo, name) if _HEX.fullmatch(name) else []
    found += commits
    if not found:
        raise _missing(repo, shown, flag)
    if len(found) > 1:
        branch = next((r for r in found if r.startswith(_BRANCHES)), found[0])
        raise TeamError(
            f"{flag} {name} is ambiguous: it names {', '.join(found)}; pass the one you "
            f"mean in full, e.g. {flag} {branch}"
        )
    (only,) = found
    if only not in commits and not only.startswith(_BRANCHES):
        raise TeamError(
            f"{flag} {name} is {only}, not a branch; pass it in full if you mean it "
            f"({flag} {only}), or fetch the branch"
        )
    return _commit(repo, only, flag, shown)


class Base(msgspec.Struct, frozen=True):
    """The branch whose merge base with HEAD the gate trusts."""

    ref: str  # as given, or a full ref
    shown: str  # for messages
    flag: str  # what named it, for messages
    implied: str | None = None  # why, when neither a flag nor a pull request named it


def trusted_revision(
    repo: Path | None, policy_from: str | None, base: str | None
) -> Revision | None:
    """The revision named by --policy-from, else the merge base of HEAD with --base (or, in
    GitHub Actions, with origin/$GITHUB_BASE_REF on a pull request and the repository's
    default branch on any other event); None outside CI without either flag (the work
    tree's files are used, as before)."""
    if policy_from and base:
        raise TeamError("give --policy-from REF or --base BRANCH, not both")
    if policy_from:
        if repo is None:
            raise TeamError("--policy-from needs the team repo (--team REPO) to read it from")
        commit = resolve(repo, policy_from, "--policy-from")
        return Revision(repo, policy_from, commit, prefix=_prefix(repo, "--policy-from"))
    named = Base(base, base, "--base") if base else actions_base()
    if named is None:
        return None
    if repo is None:
        raise TeamError(f"{named.flag} needs the team repo (--team REPO) to read the policy from")
    tip = resolve(repo, named.ref, named.flag, named.shown)
    done = _git(repo, "merge-base", "HEAD", tip)
    if done.returncode != 0:
        raise TeamError(
            f"{named.flag} {named.shown}: no merge base with HEAD in {repo} ({_said(done)}); "
            "fetch more history (actions/checkout with fetch-depth: 0)"
        )
    commit = done.stdout.decode().strip()
    ref = f"merge-base(HEAD, {named.shown})"
    return Revision(repo, ref, commit, named.implied, tip, named.shown, _prefix(repo, named.flag))


def _prefix(repo: Path, flag: str) -> str:
    """The team repo's folder within its git repository, "" at its top level."""
    done = _git(repo, "rev-parse", "--show-prefix")
    if done.returncode != 0:
        raise TeamError(f"{flag}: {repo} is not in a git repository ({_said(done)})")
    return done.stdout.decode(errors="surrogateescape").strip()


class _Repository(msgspec.Struct, frozen=True):
    default_branch: str = ""


class _Event(msgspec.Struct, frozen=True):
    repository: _Repository = _Repository()


def actions_base() -> Base | None:
    """In GitHub Actions with no flag, the base branch, read as a full remote ref: on a pull
    request its base (GITHUB_BASE_REF); on any other event (a push of any branch, a PR's own
    included; a merge queue; a manual run) the repository's default branch, from the event
    GitHub wrote, because the work tree is then whatever was pushed. None outside Actions."""
    env = os.environ
    if env.get("GITHUB_BASE_REF"):
        name = env["GITHUB_BASE_REF"]
        return Base(f"refs/remotes/origin/{name}", f"origin/{name}", "GITHUB_BASE_REF:")
    if env.get("GITHUB_ACTIONS") != "true":
        return None
    event, ref = env.get("GITHUB_EVENT_NAME", "an event"), env.get("GITHUB_REF", "?")
    default = ""
    if env.get("GITHUB_EVENT_PATH"):
        with contextlib.suppress(InputError):
            default = load_json(Path(env["GITHUB_EVENT_PATH"]), _Event).repository.default_branch
    if not default:
        raise TeamError(
            f"GitHub Actions, {event} of {ref}: no base branch to read the policy, "
            "allowed_signers and receipts from (no GITHUB_BASE_REF, and the event names no "
            "default branch); pass --base origin/<branch> (never the work tree in CI)"
        )
    return Base(
        f"refs/remotes/origin/{default}",
        f"origin/{default}",
        "the default branch:",
        f"GitHub Actions, {event} of {ref}: the repository's default branch {default}",
    )


def show(rev: Revision, rel: str | Path) -> bytes | None:
    """The bytes of `rel` at the revision; None when the revision has no such file."""
    path = rev.prefix + Path(rel).as_posix()
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
    # --full-tree: paths from the repository's root whatever folder git runs in (without it
    # they are relative to the team folder, and would be read back from the root)
    done = _git(
        rev.repo,
        "ls-tree",
        "-r",
        "-z",
        "--name-only",
        "--full-tree",
        rev.commit,
        "--",
        rev.prefix + folder,
    )
    if done.returncode != 0:
        raise TeamError(f"git ls-tree {rev.ref} {folder} failed: {_said(done)}")
    found = (p.decode(errors="surrogateescape") for p in done.stdout.split(b"\0") if p)
    return sorted(p.removeprefix(rev.prefix) for p in found)


def tree_entries(rev: Revision, folder: str) -> dict[str, str]:
    """Every file under `folder` at the revision: its path below `folder` -> `kind oid`
    (kind `link`, `program` (executable) or `file`), as work_entries gives the disk's."""
    prefix = rev.prefix + folder.rstrip("/") + "/"
    done = _git(rev.repo, "ls-tree", "-r", "-z", "--full-tree", rev.commit, "--", prefix)
    if done.returncode != 0:
        raise TeamError(f"git ls-tree {rev.ref} {folder} failed: {_said(done)}")
    out = {}
    for line in done.stdout.split(b"\0"):
        if not line:
            continue
        meta, _, path = line.partition(b"\t")
        mode, _, oid = meta.decode().split(" ")
        rel = path.decode(errors="surrogateescape").removeprefix(prefix)
        out[rel] = f"{_KIND.get(mode, 'file')} {oid}"
    return out


_KIND = {"120000": "link", "100755": "program"}  # git's modes; any other blob is a file


def gitlinks(rev: Revision, folder: Path) -> list[str]:
    """The submodules (gitlinks) git's index holds under `folder` of the work tree, as paths
    relative to the repository: on disk each is an empty folder, so no file comparison sees
    one, yet a clone with --recurse-submodules fills it with another repository's files."""
    done = _git(rev.repo, "ls-files", "--stage", "-z", "--", str(folder))
    found = (line.partition(b"\t") for line in done.stdout.split(b"\0") if line)
    return sorted(
        path.decode(errors="surrogateescape")
        for meta, _, path in found
        if meta.startswith(b"160000 ")
    )


def work_entries(rev: Revision, folder: Path) -> dict[str, str]:
    """tree_entries of the files on disk under `folder`, hashed as git hashes a blob in the
    revision's repository (a link: its text), every file there, litter too."""
    kind = _git(rev.repo, "rev-parse", "--show-object-format").stdout.decode().strip() or "sha1"
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        links = [d for d in dirnames if (here / d).is_symlink()]  # entries, never walked
        dirnames[:] = [d for d in dirnames if d not in links]
        for name in [*filenames, *links]:
            path = here / name
            link = path.is_symlink()
            data = os.fsencode(os.readlink(path)) if link else path.read_bytes()
            oid = hashlib.new(kind, b"blob %d\0" % len(data) + data).hexdigest()
            rel = path.relative_to(folder).as_posix()
            program = not link and path.stat().st_mode & 0o100
            out[rel] = f"{'link' if link else 'program' if program else 'file'} {oid}"
    return out
