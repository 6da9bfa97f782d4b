"""Handing a workspace from the agent to the checker (docs/trust.md), inside the checker sandbox.

The checker sees the workspace as the agent left it, minus every way the agent could have
aimed it at the answer key or locked it. `hand_over` runs as root in the checker's executor,
before any check and after every agent process is gone, so nothing changes under it:

- A symlink stays only when it leads, now, to something that exists inside the workspace or on
  the image's read-only root filesystem, through links that are themselves in one of those two
  places. Every other link is cut: one into /case, /tmp, /logs, HOME, the checker's own files
  or /proc (which resolves differently for each reader), and one that dangles or loops, which
  whatever the check phase stages later could bring to life. A cut link is replaced by a link
  under /dev/null/, which never resolves, its old target kept as text after that prefix.
- Hard links are broken (each name gets its own copy): a file the check phase writes under one
  name never shows under another one the agent chose.
- Every entry belongs to the checker, and its owner may read and write it (and enter folders):
  `chmod 000` locks nothing.
- A git repository's config keeps only what reading the repository needs (format, remotes,
  branches, identity): no include, filter, textconv, diff or ssh command, gpg program, alias,
  hook path or fsmonitor of the agent's runs when a check asks git about the workspace. That
  holds for every config git would read: the one in the folder a repository's `commondir`
  names (which has no HEAD of its own), and a config that is a link (to a file of the
  agent's, say) becomes a regular file with the tamed content of what it led to.
- A repository's hooks folder and its object alternates are removed, in every git folder the
  walk finds (and the one its `commondir` names): a check that runs git with an environment
  of its own (`env -i`, a subprocess given its own `env`) drops the checker's
  `core.hooksPath`, and git would run the agent's hooks as the checker; alternates would
  have git read objects from wherever the agent pointed.
- Nothing but regular files, folders and links stays: a fifo, socket or device node is
  removed (a check that opened a fifo would hang on it), each with a note.
- It is bounded, so that no workspace makes it outlast the host's wait: past the walk's
  budget (_WALK) it raises Unbounded, and no check reads the workspace.

`stage` is for verifiers that put the answer key inside the workspace, as Margin does with
tests/ at its test_cwd: it removes the destination, cuts every link in the workspace that
leads into it, then copies the files there (`python3 -I /opt/skillbench/handover.py stage SRC
DEST WORKDIR`).

This file must stay standard-library only and run on the image's python3, like executor.py.
"""

import contextlib
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

CUT = "/dev/null/"  # a link under it never resolves: /dev/null is not a folder
_HOPS = 40  # symlinks followed while resolving one path, as the kernel allows
# path components resolve() looks up in one handover, over every link (a step costs one per
# component of the path it looks at): a workspace built to be slow to resolve (chains of long
# `x/..` targets, folders nested 1,800 deep) would otherwise outlast the host's wait, and the
# arm, declared hung, go unscored; past it a link leads nowhere, and is cut
_STEPS = 20_000_000
_left = [_STEPS]
# bytes of hard-linked files a handover copies (each name its own copy): past them a name is
# removed instead, as copying one big file under hundreds of names would outlast that wait
_COPIES, _COPY_FLOOR = 1 << 30, 64 << 10
_copied = [0]
_GIT_CONFIG_CAP = 1 << 20  # bytes: a repository's config is a few hundred
_GIT_CONFIG_KEYS = 10_000  # entries: a repository's config has a few dozen
# git folders tamed in one workspace; past these they are removed: each costs a `git config`
# process, and tens of thousands made the handover after every check outlast the host's
# wait, so the sandbox was declared hung and a losing arm's row went unscored
_MOST_GITS = 200
_DEEP = 3800  # bytes of a folder's path past which its entries' paths may pass PATH_MAX
# the walk's own cost, in path-component lookups (~0.13 µs each here): an entry costs
# _ENTRY (~8 µs) plus its path's components for each time it is looked up by path (its
# lstat; its chown and chmod where they change it). Past the budget (~13 s; about a million
# entries of an ordinary workspace, 27,000 1,800 folders deep) the handover stops and the
# workspace is refused: what it did not walk it cannot vouch for, and a walk left to run
# would outlast the host's wait (an arm declared hung, its row unscored). A refused
# workspace fails every check of its arm (docs/trust.md).
_ENTRY, _WALK = 64, 100_000_000
_RM_SECONDS = 20  # to remove what is nested too deep to walk (no honest workspace has any)
_RM_COST = 20_000  # an `rm` process (~2.5 ms): a folder nested too deep, a git folder past 200
_walked = [0]
# and a clock, the last resort for what no budget above foresaw: the host's wait less a
# margin (hand_over's `seconds`); past it, as past the budget
_deadline = [math.inf]
_NOTES, _NOTE = 200, 300  # notes kept, characters of each (a link's target can be 4,000)


class Unbounded(Exception):
    """The workspace holds more than one handover walks: no check may read it."""


# On the API-only path the host's files are copied in rather than bind-mounted
# (sandbox/podman/channel.py): this file names those places, which count as mount points here.
COPIED = "/opt/skillbench/copied-in"


def _mount_points():
    """The mount points of this sandbox, from /proc/self/mountinfo, and the places copied in
    instead of mounted."""
    points = []
    with contextlib.suppress(FileNotFoundError), open(COPIED) as fh:
        points += [line.rstrip("\n") for line in fh if line.strip()]
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            field = line.split()[4]
            for code in ("\\040", "\\011", "\\012", "\\134"):  # spaces etc. come escaped
                field = field.replace(code, chr(int(code[1:], 8)))
            points.append(field)
    return points


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _spent(here):
    """Whether this handover's lookups for following links have run out (one more step, at
    `here`, taken)."""
    _left[0] -= here.count("/") + 1
    return _left[0] < 0


def resolve(path):
    """(where `path` leads, the symlinks met on the way), or None when some step of it does
    not exist or the links loop. Like the kernel: `..` applies to the resolved folder."""
    todo = path.split("/")[::-1]
    here, met = "/", []
    while todo:
        if _spent(here):
            return None
        part = todo.pop()
        if part in ("", "."):
            continue
        if part == "..":
            here = os.path.dirname(here)
            continue
        step = os.path.join(here, part)
        try:
            info = os.lstat(step)
        except OSError:
            return None
        if stat.S_ISLNK(info.st_mode):
            met.append(step)
            if len(met) > _HOPS:
                return None
            target = os.readlink(step)
            todo.extend(target.split("/")[::-1])
            if target.startswith("/"):
                here = "/"
            continue
        if todo and not stat.S_ISDIR(info.st_mode):
            return None
        here = step
    return here, met


class _Places:
    """Where a kept link may lead: the workspace, or the root filesystem (the image, read-only
    in every phase) away from every other mount and from anything above one."""

    def __init__(self, workdir, mounts):
        self.workdir = workdir
        self.others = [m for m in mounts if m != "/" and not _inside(m, workdir)]

    def fixed(self, path):
        if _inside(path, self.workdir):
            return True
        return not any(_inside(path, m) or _inside(m, path) for m in self.others)

    def safe(self, link):
        found = resolve(link)
        if found is None:
            return False
        end, met = found
        return self.fixed(end) and all(self.fixed(m) for m in met)


def _cut(path, target):
    """Replace the link at `path` by one that never resolves (in a full workspace, where a
    long one does not fit, a short one; where not even that fits, the link is just gone)."""
    os.unlink(path)
    for cut in ((CUT + target.lstrip("/"))[:4000], CUT + "x"):
        with contextlib.suppress(OSError):
            os.symlink(cut, path)
            return


def _own_copy(path, info):
    """Give one name of a hard-linked file its own copy (removed when there is no room)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".skillbench-copy-", dir=os.path.dirname(path))
        with open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        os.rename(tmp, path)
        return f"{path}: a hard link, now a copy of its own"
    except OSError as exc:
        for name in [tmp, path] if tmp else [path]:
            with contextlib.suppress(OSError):
                os.unlink(name)
        return f"{path}: a hard link, removed (no copy: {exc.strerror or exc})"


# what a check reading the repository needs; nothing here makes git run a program or read a
# file outside the repository
_GIT_KEEP = (
    "core.repositoryformatversion",
    "core.bare",
    "core.filemode",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.abbrev",
    "extensions.*",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "branch.*.remote",
    "branch.*.merge",
    "user.name",
    "user.email",
    "init.defaultbranch",
)


def _git_keeps(key):
    section, _, rest = key.partition(".")
    name = rest.rpartition(".")[2]
    sub = "*" if "." in rest else ""
    return any(
        k in (f"{section}.{name}", f"{section}.{sub}.{name}", f"{section}.*") for k in _GIT_KEEP
    )


def _quoted(text):
    for old, new in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\t", "\\t")):
        text = text.replace(old, new)
    return f'"{text}"'


def _tame_git_config(path):
    """Rewrite a repository's config with only the _GIT_KEEP entries (as git itself parses
    it, includes not followed); a note when something was dropped."""
    git = shutil.which("git", path="/usr/local/bin:/usr/bin:/bin")
    if git is None:  # no git in the image: nothing will read it
        return None
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent"}
    _charge(_ENTRY)  # (and the clock: what is left of it bounds the `git config`)
    try:
        if os.lstat(path).st_size > _GIT_CONFIG_CAP:
            raise OSError("too big")
        listed = subprocess.run(
            [git, "config", "--file", path, "--no-includes", "--list", "-z"],
            capture_output=True,
            env=env,
            cwd="/",
            timeout=max(0.1, min(30, _deadline[0] - time.monotonic())),
        )
        entries = [e.decode("utf-8", "surrogateescape") for e in listed.stdout.split(b"\0") if e]
        if listed.returncode != 0:
            raise OSError(f"git cannot read it: exit {listed.returncode}")
        if len(entries) > _GIT_CONFIG_KEYS:
            raise OSError(f"{len(entries)} entries")
    except (OSError, subprocess.SubprocessError) as exc:
        # what git cannot list, quickly and in a few entries, is emptied: git would refuse a
        # repository whose config it cannot read, but a check could still read the file
        with open(path, "w"):
            pass
        return f"{path}: git config emptied ({exc})"
    _charge(len(entries))
    pairs = [tuple(e.split("\n", 1)) if "\n" in e else (e, None) for e in entries]
    # (a set: 120,000 keys with a long shared prefix, looked up in a list, took minutes)
    dropped = {key for key, _ in pairs if not _git_keeps(key)}
    if not dropped:
        return None
    lines, header = [], None
    for key, value in pairs:
        if key in dropped:
            continue
        section, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        head = f"[{section} {_quoted(sub)}]" if sub else f"[{section}]"
        if head != header:
            lines.append(head)
            header = head
        lines.append(f"\t{name}" if value is None else f"\t{name} = {_quoted(value)}")
    tmp = f"{path}.skillbench-new"
    try:
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write("".join(line + "\n" for line in lines))
        os.rename(tmp, path)
    except OSError as exc:  # a full workspace: no config rather than the agent's
        for name in (tmp, path):
            with contextlib.suppress(OSError):
                os.unlink(name)
        return f"{path}: git config removed (not rewritten: {exc.strerror or exc})"
    return f"{path}: git config without {', '.join(sorted(dropped))[:300]}"


def hand_over(workdir, uid, gid, also=(), seconds=None):
    """Make `workdir`, and each folder of `also` (the case's volumes the agent's sandbox
    had), the checker's (uid, gid) as described above, within one budget and in at most
    `seconds`; returns notes on what was cut, copied or rewritten, one per entry (the first
    _NOTES). Raises Unbounded past the budget or the time."""
    _left[0], _copied[0], _walked[0] = _STEPS, 0, 0
    _deadline[0] = math.inf if seconds is None else time.monotonic() + seconds
    mounts = _mount_points()
    notes = _hand_over(workdir, uid, gid, mounts)
    for place in also:
        if os.path.isdir(place) and not os.path.islink(place):
            notes += _hand_over(place, uid, gid, mounts)
    more = [f"... and {len(notes) - _NOTES} more"] if len(notes) > _NOTES else []
    half = _NOTE // 2  # (a note's end says what was done)
    return [n if len(n) <= _NOTE else f"{n[:half]}...{n[-half:]}" for n in notes[:_NOTES]] + more


def _hand_over(workdir, uid, gid, mounts):
    places = _Places(workdir, mounts)
    notes, links, gits = [], [], []
    deep: list = []  # folders nested too deep to walk by path
    _own(workdir, os.lstat(workdir), uid, gid)
    for path, info in _walk(workdir, deep):
        changed = True
        if stat.S_ISLNK(info.st_mode):
            links.append(path)
            changed = False
        elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            _copied[0] += max(info.st_size, _COPY_FLOOR)  # (an empty file's copy costs too)
            if _copied[0] <= _COPIES:
                notes.append(_own_copy(path, info))
            else:
                os.unlink(path)
                notes.append(f"{path}: a hard link past {_COPIES >> 20} MiB of copies, removed")
        elif not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
            os.unlink(path)
            notes.append(f"{path}: {_KINDS.get(stat.S_IFMT(info.st_mode), 'special')}, removed")
        else:
            changed = False
        if changed:  # (copied: a new file; or gone, a hard link there was no room to copy)
            if not os.path.lexists(path):
                continue
            info = os.lstat(path)
        _own(path, info, uid, gid)
        if os.path.basename(path) == "HEAD":  # (git takes a HEAD that is a link too)
            gits += _git_folders(os.path.dirname(path), workdir, notes)
        elif os.path.basename(path) == ".git" and stat.S_ISREG(info.st_mode):
            gits += _git_file(path, workdir, notes)
        elif os.path.basename(path) == ".git" and stat.S_ISLNK(info.st_mode):
            _git_link(path, workdir, notes)
    for folder in deep:  # (rm works below any depth, by descriptor)
        _charge(_RM_COST)
        try:  # (not walked, so not charged: millions of entries in one would outlast the wait)
            left = min(_RM_SECONDS, _deadline[0] - time.monotonic())
            subprocess.run(["rm", "-rf", "--", folder], check=False, timeout=max(left, 1e-6))
        except subprocess.TimeoutExpired:
            raise Unbounded(f"{folder} is nested too deep and holds too much to remove") from None
        notes.append(f"{folder}: nested too deep for a path to reach what it holds, removed")
    gits = sorted(set(gits))  # (the workspace's own, when it is one, first)
    extra = [g for g in gits[_MOST_GITS:] if g != workdir and os.path.lexists(g)]
    for git in extra:  # (taming each costs a git process; see _MOST_GITS)
        _charge(_RM_COST)
        _remove(git)
    if extra:
        notes.append(
            f"{extra[0]} and {len(extra) - 1} more: git folders past {_MOST_GITS}, removed"
        )
    gits = gits[:_MOST_GITS]
    for git in gits:
        for part in ("hooks", os.path.join("objects", "info", "alternates")):
            found = os.path.join(git, part)
            if os.path.lexists(found):
                _remove(found)
                notes.append(f"{found}: removed (git would run or read it for the checker)")
    configs = [os.path.join(g, n) for g in gits for n in ("config", "config.worktree")]
    for config in sorted(set(configs)):
        if not os.path.lexists(config):
            continue
        if os.path.islink(config):
            notes.append(_config_from_link(config, workdir))
            if os.path.lexists(config):
                _own(config, os.lstat(config), uid, gid)
        if not os.path.isfile(config) or os.path.islink(config):
            continue  # a folder, say: git refuses such a repository
        note = _tame_git_config(config)
        if note:
            notes.append(note)
            if os.path.lexists(config):
                _own(config, os.lstat(config), uid, gid)
    # decide every link before cutting any: the decisions must not depend on the order
    unsafe = [link for link in links if os.path.islink(link) and not places.safe(link)]
    for link in unsafe:
        target = os.readlink(link)
        if target.startswith(CUT):  # cut already (a reused session's workspace)
            continue
        _charge(6 * link.count("/"))  # (its unlink, symlink, chown... each look the path up)
        _cut(link, target)
        if os.path.lexists(link):  # (gone, in a full workspace)
            os.lchown(link, uid, gid)
        notes.append(f"{link}: a link to {target}, cut")
    return notes


def _walk(top, deep):
    """Every entry below `top` as (path, lstat), a folder before what it holds; no link
    followed and no recursion. A folder whose path is too long to name what it holds is
    not entered, it is added to `deep`."""
    stack = [top]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                found = list(entries)
        except FileNotFoundError:  # (removed on the way: a git folder's commondir, say)
            continue
        for entry in found:
            _charge(_ENTRY + entry.path.count("/"))  # (DirEntry.stat looks the path up)
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield entry.path, info
            if stat.S_ISDIR(info.st_mode):
                (deep if len(os.fsencode(entry.path)) > _DEEP else stack).append(entry.path)


def _own(path, info, uid, gid):
    """`path` (whose lstat is `info`) to uid:gid with owner read and write (and enter, for a
    folder), each change charged to the walk (looking the path up); an entry already so, as
    after the first handover, costs nothing more."""
    if (info.st_uid, info.st_gid) != (uid, gid):
        _charge(path.count("/"))
        os.lchown(path, uid, gid)
    if stat.S_ISLNK(info.st_mode):
        return
    mode = stat.S_IMODE(info.st_mode) & 0o777 | (0o700 if stat.S_ISDIR(info.st_mode) else 0o600)
    if stat.S_IMODE(info.st_mode) != mode:
        _charge(path.count("/"))
        os.chmod(path, mode)


def _charge(cost):
    """Charge `cost` path lookups to the walk; past its budget or its time, Unbounded."""
    _walked[0] += cost
    if _walked[0] > _WALK or time.monotonic() > _deadline[0]:
        raise Unbounded(
            "the workspace holds more than a handover walks (about a million entries, fewer "
            "nested deep): no check may read it"
        )


_KINDS = {stat.S_IFIFO: "a fifo", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device"}
_KINDS[stat.S_IFBLK] = "a device"


def _remove(path):
    """Remove a file, a link or a whole folder (a link is removed, never followed)."""
    if os.path.isdir(path) and not os.path.islink(path):
        subprocess.run(["rm", "-rf", "--", path], check=False, timeout=300)
    else:
        os.unlink(path)


def _git_folders(git_dir, workdir, notes):
    """The git folders of the repository at `git_dir` (a folder holding HEAD): itself, and
    the folder its `commondir` names, which must be one of the workspace's (git would read
    the config, hooks and filters of one elsewhere, /tmp say, that no handover tames): a
    `commondir` leading anywhere else is removed."""
    folders = [git_dir]
    common = os.path.join(git_dir, "commondir")
    if not os.path.lexists(common):
        return folders
    found = None
    with contextlib.suppress(OSError, UnicodeDecodeError), open(common, "rb") as fh:
        found = resolve(os.path.join(git_dir, fh.read(4096).decode().strip()))
    if found is not None and _inside(found[0], workdir) and os.path.isdir(found[0]):
        folders.append(found[0])
    else:
        _remove(common)
        notes.append(f"{common}: leads out of the workspace, removed")
    return folders


def _git_file(path, workdir, notes):
    """A `.git` file ("gitdir: <folder>") makes the folder a repository whose git folder is
    that one: one of the workspace's (tamed with the rest), or the file is removed, as git
    would run the config and filters of a folder elsewhere that no handover sees."""
    found = None
    with contextlib.suppress(OSError, UnicodeDecodeError):
        with open(path, "rb") as fh:
            line = fh.read(4096).decode().strip()
        if line.startswith("gitdir:"):
            found = resolve(os.path.join(os.path.dirname(path), line[len("gitdir:") :].strip()))
    if found is not None and _inside(found[0], workdir) and os.path.isdir(found[0]):
        return _git_folders(found[0], workdir, notes)
    os.unlink(path)
    notes.append(f"{path}: a git file that leads out of the workspace, removed")
    return []


def _git_link(path, workdir, notes):
    """A `.git` that is a link: git follows it to a git folder (one of the workspace's is
    walked and tamed with the rest) or to a git file, whose folder, named by what it holds,
    no handover would see: a link to anything but a folder of the workspace is removed."""
    found = resolve(path)
    if found is not None and _inside(found[0], workdir) and os.path.isdir(found[0]):
        return
    os.unlink(path)
    notes.append(f"{path}: a link git would follow to a git file or out of the workspace, removed")


def _config_from_link(path, workdir):
    """Replace a repository's config that is a link by a regular file holding what it led
    to when that is a file of the workspace; else an empty one. Never an image file: root
    reads it here, and a file of the image only root may read (/etc/shadow, a key the case
    keeps for its root verifier) would be handed to the agent's code and the grader."""
    target = os.readlink(path)
    found = resolve(path)
    inside = found is not None and _inside(found[0], workdir)
    tmp = f"{path}.skillbench-new"
    try:
        with open(tmp, "wb") as dst:
            if inside and os.path.isfile(path):
                with open(path, "rb") as src:
                    dst.write(src.read(_GIT_CONFIG_CAP + 1))
        os.rename(tmp, path)
    except OSError as exc:
        for name in (tmp, path):
            with contextlib.suppress(OSError):
                os.unlink(name)
        return f"{path}: a git config linked to {target}, removed ({exc.strerror or exc})"
    made = "a regular file" if inside else "an empty file (its target is not the workspace's)"
    return f"{path}: a git config linked to {target}, now {made}"


def stage(src, dest, workdir):
    """Copy `src` to `dest` inside the workspace after removing what is there and cutting
    every link in the workspace that would lead into it."""
    dest = os.path.abspath(dest)
    _walked[0] = 0
    subprocess.run(["rm", "-rf", "--", dest], check=True)  # (rm: any depth of nesting)
    for path, info in list(_walk(workdir, [])):
        if not stat.S_ISLNK(info.st_mode):
            continue
        target = os.readlink(path)
        if not target.startswith(CUT) and _into(path, dest):  # (cut already: no steps spent)
            _cut(path, target)
    shutil.copytree(src, dest, symlinks=False)


def _into(link, dest):
    """Whether `link` leads into `dest` (which does not exist now: the rest is read as text),
    or may: one too costly to follow (past the steps or the hops) is taken to, and cut."""
    here, todo, hops = "/", link.split("/")[::-1], 0
    while todo:
        if _spent(here):
            return True
        part = todo.pop()
        if part in ("", "."):
            continue
        if part == "..":
            here = os.path.dirname(here)
            continue
        step = os.path.join(here, part)
        if _inside(step, dest):
            return True
        if os.path.islink(step):
            hops += 1
            if hops > _HOPS:
                return True
            target = os.readlink(step)
            todo.extend(target.split("/")[::-1])
            here = "/" if target.startswith("/") else here
            continue
        here = step
    return _inside(here, dest)


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "stage":
        sys.exit("usage: handover.py stage SRC DEST WORKDIR")
    stage(sys.argv[2], sys.argv[3], sys.argv[4])
