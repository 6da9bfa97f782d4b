"""Handing a workspace from the agent to the checker (design §15), inside the checker sandbox.

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

`stage` is for verifiers that put the answer key inside the workspace, as Margin does with
tests/ at its test_cwd: it removes the destination, cuts every link in the workspace that
leads into it, then copies the files there (`python3 -I /opt/skillbench/handover.py stage SRC
DEST WORKDIR`).

This file must stay standard-library only and run on the image's python3, like executor.py.
"""

import contextlib
import os
import shutil
import stat
import sys

CUT = "/dev/null/"  # a link under it never resolves: /dev/null is not a folder
_HOPS = 40  # symlinks followed while resolving one path, as the kernel allows


def _mount_points():
    """The mount points of this sandbox, from /proc/self/mountinfo."""
    points = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            field = line.split()[4]
            for code in ("\\040", "\\011", "\\012", "\\134"):  # spaces etc. come escaped
                field = field.replace(code, chr(int(code[1:], 8)))
            points.append(field)
    return points


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def resolve(path):
    """(where `path` leads, the symlinks met on the way), or None when some step of it does
    not exist or the links loop. Like the kernel: `..` applies to the resolved folder."""
    todo = path.split("/")[::-1]
    here, met = "/", []
    while todo:
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
    os.unlink(path)
    os.symlink((CUT + target.lstrip("/"))[:4000], path)


def _own_copy(path, info):
    """Give one name of a hard-linked file its own copy (removed when there is no room)."""
    tmp = f"{path}.skillbench-copy"
    try:
        with open(path, "rb") as src, open(tmp, "xb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        os.rename(tmp, path)
        return f"{path}: a hard link, now a copy of its own"
    except OSError as exc:
        for name in (tmp, path):
            with contextlib.suppress(OSError):
                os.unlink(name)
        return f"{path}: a hard link, removed (no copy: {exc.strerror or exc})"


def hand_over(workdir, uid, gid):
    """Make `workdir` the checker's (uid, gid) as described above; returns notes on what was
    cut or copied, one per entry."""
    places = _Places(workdir, _mount_points())
    notes, links, stack = [], [], [workdir]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            found = list(entries)
        for entry in found:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                links.append(entry.path)
                continue
            if stat.S_ISDIR(info.st_mode):
                stack.append(entry.path)
            elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                notes.append(_own_copy(entry.path, info))
    # decide every link before cutting any: the decisions must not depend on the order
    unsafe = [link for link in links if not places.safe(link)]
    for link in unsafe:
        target = os.readlink(link)
        _cut(link, target)
        notes.append(f"{link}: a link to {target}, cut")
    _claim(workdir, uid, gid)
    return notes


def _claim(workdir, uid, gid):
    """Everything under `workdir` to uid:gid, with owner read and write (and enter)."""
    for folder, dirs, files in os.walk(workdir):
        os.lchown(folder, uid, gid)
        os.chmod(folder, stat.S_IMODE(os.lstat(folder).st_mode) & 0o777 | 0o700)
        for name in dirs + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            os.lchown(path, uid, gid)
            if not stat.S_ISLNK(info.st_mode) and not stat.S_ISDIR(info.st_mode):
                os.chmod(path, stat.S_IMODE(info.st_mode) & 0o777 | 0o600)


def stage(src, dest, workdir):
    """Copy `src` to `dest` inside the workspace after removing what is there and cutting
    every link in the workspace that would lead into it."""
    dest = os.path.abspath(dest)
    if os.path.islink(dest) or os.path.isfile(dest):
        os.unlink(dest)
    elif os.path.isdir(dest):
        shutil.rmtree(dest)
    for folder, dirs, files in os.walk(workdir):
        for name in dirs + files:
            path = os.path.join(folder, name)
            if os.path.islink(path) and _into(path, dest):
                _cut(path, os.readlink(path))
    shutil.copytree(src, dest, symlinks=False)


def _into(link, dest):
    """Whether `link` leads into `dest` (which does not exist now: the rest is read as text)."""
    here, todo, hops = "/", link.split("/")[::-1], 0
    while todo:
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
                return False
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
