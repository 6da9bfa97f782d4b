"""The skill observer, in the sandbox (docs/trust.md, "Activation"): which files of the staged
skills were opened while the agent worked, as the kernel saw it, not as a transcript tells it.

It runs inside the executor (executor.py, beside this file in every sandbox), the container's
root PID 1 that no agent process can signal, ptrace or read. At `arm` it puts one inotify
watch on every regular file under each skill's folders (/skills/<name>, and the copy an agent
CLI made of it) with IN_ONESHOT: the kernel queues that file's first open (or read: IN_ACCESS,
which exec of a binary gives) and drops the watch itself. An inotify watch is on the inode, so
an open through any path counts (a symlink, `..`, a glob, `cd`, `$(...)`, `xargs`, `dd`, `<`,
`source`, python's open, an interpreter running a script, exec, mmap after the open), and a file
of the same name elsewhere does not. Every file queues at most two events (the open, then the
watch's removal), so no flood of opens overflows the queue; nothing runs until `report`, which
reads what the kernel queued. The files are root's and unwritable by the agent (a read-only
mount, or a copy the CLI staging handed to root), so an open is a read: the agent cannot fake
one by opening a file to write.

`arm` runs when the agent can first act: now (the builtin loop, whose tools are the executor's
own commands), or on the first model reply relayed into the sandbox (an agent CLI, whose own
start-up reads every SKILL.md to list the skills: that is no load). Stdlib only.
"""

import ctypes
import errno
import os
import stat
import struct
import threading

IN_ACCESS, IN_OPEN = 0x1, 0x20
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_DONT_FOLLOW, IN_ONESHOT = 0x2000000, 0x80000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)
MOST_FILES = 8000  # two events each must fit the default queue (16384)


class Observer:
    """What `observe` asked for, and once armed, the inotify instance watching it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.skills = {}  # name -> the folders that hold it in the sandbox
        self.armed = False
        self.fd = -1
        self.watched = {}  # wd -> [(skill, path relative to its folder)]
        self.seen = {}  # skill -> {relative path: "open" | "access"}
        self.blind = None  # why the observer cannot tell (the host refuses such a report)

    def plan(self, skills, now):
        """Watch `skills` (name -> folders); `now`: arm at once, else at the first reply."""
        with self.lock:  # (afresh: what an earlier `observe` watched is dropped)
            if self.fd >= 0:
                os.close(self.fd)
            self.fd, self.armed, self.watched, self.seen, self.blind = -1, False, {}, {}, None
            self.skills = {str(k): [str(f) for f in v] for k, v in skills.items()}
        if now:
            self.arm()

    def arm(self):
        with self.lock:
            if self.armed or not self.skills:
                return
            self.armed = True
            try:
                self._watch()
            except OSError as exc:
                self.blind = f"could not watch the staged skills: {exc}"

    def _watch(self):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        mask = IN_OPEN | IN_ACCESS | IN_ONESHOT | IN_DONT_FOLLOW
        count = 0
        for skill, folders in self.skills.items():
            for folder in folders:
                for path, rel in _files(folder):
                    count += 1
                    if count > MOST_FILES:
                        raise OSError(errno.E2BIG, f"more than {MOST_FILES} skill files")
                    wd = libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
                    if wd < 0:
                        raise OSError(ctypes.get_errno(), path)
                    self.watched.setdefault(wd, []).append((skill, rel))

    def report(self):
        """What was opened since `arm`: {"armed", "seen": {skill: {rel: kind}}, "blind"}."""
        with self.lock:
            if self.fd >= 0:
                self._drain()
            return {
                "armed": self.armed,
                "seen": {k: dict(sorted(v.items())) for k, v in sorted(self.seen.items())},
                "blind": self.blind,
            }

    def _drain(self):
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            at = 0
            while at + _EVENT.size <= len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, at)
                at += _EVENT.size + size
                if mask & IN_Q_OVERFLOW:
                    self.blind = "the skill observer's event queue overflowed"
                if mask & (IN_OPEN | IN_ACCESS):
                    kind = "open" if mask & IN_OPEN else "access"
                    for skill, rel in self.watched.get(wd, ()):
                        self.seen.setdefault(skill, {}).setdefault(rel, kind)


def _files(folder):
    """(path, path relative to `folder`) of every regular file under it, links not followed."""
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    yield path, os.path.relpath(path, folder)
            except OSError:
                continue


OBSERVER = Observer()


def observe(req):
    OBSERVER.plan(req.get("skills") or {}, bool(req.get("now", True)))
    return {}


def observed(req):
    return OBSERVER.report()
