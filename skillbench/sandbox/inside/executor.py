"""The in-sandbox executor: the container's PID 1, serving JSON lines on a unix socket
(--listen PATH) or on its own stdin and stdout (--stdio, the API-only path).

It is the container's main process, so a command costs a socket round trip instead of a new
`podman exec` (~100 ms, and ~0.13 CPU-s for the podman CLI). As PID 1 it cannot be killed
from inside the container (not even by `kill -9 -1`), and it reaps orphaned processes so
zombies never use up the pids limit. It listens on the socket path given with --listen (a
folder bind-mounted from the host), takes exactly one connection and then removes the path.
This file must stay standard-library only and run on the image's python3.

The executor stays root; everything it does for the host runs as the sandbox's user (--user,
a name from the image's passwd): commands through setuid in the child, file operations in a
forked child that drops to the user first. A user process has no capabilities, cannot
signal, ptrace or read the memory of this root, non-dumpable process, and is the OOM
killer's first choice.

Request: {"id": n, "op": "exec"|"read"|"write"|"exists"|"handover"|"observe"|"observed", ...};
reply: {"id": n, ...}. An "exec" may name another `user`; "handover" gives the workspace to the
named user the way handover.py (beside this file) says, in this root process, before any check;
"observe" and "observed" are the skill observer's (observer.py, beside this file). With
--seal every command starts under seal.py (beside this file): none of its processes can
reach another's memory.
Commands run in their own session so a timeout kills the whole process group from inside.
"""

import base64
import contextlib
import ctypes
import errno
import json
import os
import pwd
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import typing

_OUT = threading.Lock()
GRACE = 0.5  # seconds to wait for output from background children after the command exits
_conn: typing.Any = None  # the host's connection: a socket, or _Stdio
# Children we wait for ourselves; the reaper must not take their exit status.
_SPAWN = threading.Lock()
_ACTIVE: set = set()
_USER = None  # the pwd entry everything runs as (set in main)
_WORKDIR = "/work"  # the workspace: where commands start and file paths resolve (--workdir)
_VICTIM = 1000  # oom_score_adj of every user process: the OOM killer takes them first
_SEAL = None  # with --seal: seal.py, beside this file, which every command starts under
_TAINTED = None  # why no sealed command may run any more (a leftover that would not die)
# to empty HOME and /dev/shm after a check: with the handover's 40 s, inside the minute the
# host waits past a command's timeout
_SWEEP_SECONDS = 15
_HANDED: list = []  # the case's volumes handed over beside the workspace (tamed like it)


class _Stdio:
    """The channel as this process's stdin and stdout (--stdio), attached to through podman's
    API (sandbox/podman/channel.py). Both move to descriptors no child inherits (close-on-exec) and
    0, 1, 2 become /dev/null: nothing a command or a stray print writes reaches the host."""

    def __init__(self):
        self.fds = (os.dup(0), os.dup(1))
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)

    def sendall(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.fds[1], view) :]

    def makefile(self, mode):
        return os.fdopen(self.fds[0], mode)


def _drop_channel():
    """In a forked child: close the host's channel, so only this process can write to it."""
    for fd in _conn.fds if isinstance(_conn, _Stdio) else (_conn.fileno(),):
        with contextlib.suppress(OSError):
            os.close(fd)


def _reply(message):
    data = (json.dumps(message) + "\n").encode()
    with _OUT:
        _conn.sendall(data)  # (set before the first reply)


class _Capture:
    """A pipe read to the end, keeping the first and last cap/2 bytes and the total.

    Readable at any moment: a background child may hold the pipe open long after the
    command exits, and the answer must not wait for it.
    """

    def __init__(self, cap):
        self.half = cap // 2
        self.head, self.tail, self.total = bytearray(), bytearray(), 0
        self.lock = threading.Lock()

    def drain(self, fd):
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self.lock:
                self.total += len(chunk)
                if len(self.head) < self.half:
                    take = self.half - len(self.head)
                    self.head += chunk[:take]
                    chunk = chunk[take:]
                if chunk:
                    self.tail += chunk
                    if len(self.tail) > self.half:
                        del self.tail[: len(self.tail) - self.half]
        os.close(fd)

    def encoded(self):
        """(base64 text, cut?) with a marker where the middle was dropped."""
        with self.lock:
            head, tail, total = bytes(self.head), bytes(self.tail), self.total
        cut = total - len(head) - len(tail)
        if cut <= 0:
            return base64.b64encode(head + tail).decode(), False
        marker = f"\n[... {cut} bytes cut ...]\n".encode()
        return base64.b64encode(head + marker + tail).decode(), True


def _os_error(exc):
    """An OSError as the host raises it again (sandbox/podman/container.py)."""
    return {"error": type(exc).__name__, "message": exc.strerror or str(exc), "errno": exc.errno}


def _user(req):
    name = req.get("user")
    return pwd.getpwnam(name) if name else _USER


def _env_for(user, extra):
    """The container's environment (never the host's) with the user's own HOME and names."""
    env = dict(os.environ)
    env.update(HOME=user.pw_dir, USER=user.pw_name, LOGNAME=user.pw_name, TMPDIR="/tmp")
    env.update(extra or {})
    return env


def _exec(req):
    started = time.monotonic()
    if _SEAL is not None:
        with _SPAWN:
            if not _ACTIVE:  # nothing an earlier command left runs beside this one
                _kill_leftovers()
        if _TAINTED:  # a failed command, never an error: an error would be retried, unscored
            return {
                "exit_code": 126,
                "stdout": "",
                "stderr": base64.b64encode(f"skillbench: {_TAINTED}\n".encode()).decode(),
                "timed_out": False,
                "truncated": False,
                "duration": 0.0,
            }
    user = _user(req)
    env = _env_for(user, req.get("env"))
    cmd = req["cmd"]
    argv = ["/bin/bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    drop = {}
    if _SEAL is not None:  # (after choom, which writes to /proc, below)
        argv = [sys.executable, "-I", "-S", _SEAL, "--", *argv]
    if user.pw_uid != 0:
        # choom: the OOM killer takes a user process before this one (which cannot lower
        # its own score without CAP_SYS_RESOURCE on some hosts)
        argv = ["choom", "-n", str(_VICTIM), "--", *argv]
        drop = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    stdin = base64.b64decode(req["stdin"]) if req.get("stdin") is not None else None
    cap = int(req.get("cap", 1 << 20))
    # the pipes are this root process's (0600): no process of the user reopens another's
    # stdout through /proc/<pid>/fd (a CLI's transcript stream, a grader's verdict), so a
    # user's `> /dev/stdout` is refused too (tests/importers/test_skillopt_suite.py)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe() if stdin is not None else (None, None)
    # Every helper thread starts before the command does: a command that uses up the pids
    # limit (a fork bomb) must not leave us unable to read its output or time it out.
    captures = (_Capture(cap), _Capture(cap))
    helpers = [
        threading.Thread(target=capture.drain, args=(fd,), daemon=True)
        for fd, capture in ((out_r, captures[0]), (err_r, captures[1]))
    ]
    if stdin is not None:
        helpers.append(threading.Thread(target=_feed, args=(in_w, stdin), daemon=True))
    for t in helpers:
        t.start()
    try:
        with _SPAWN:
            proc = subprocess.Popen(
                argv,
                cwd=req.get("cwd") or _WORKDIR,
                env=env,
                stdin=in_r if in_r is not None else subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                start_new_session=True,
                **drop,
            )
            _ACTIVE.add(proc.pid)
    finally:
        for fd in (out_w, err_w, in_r):
            if fd is not None:
                os.close(fd)
    timed_out = False
    try:
        code = _wait(proc, float(req.get("timeout", 120)))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        code = proc.wait()
    finally:
        with _SPAWN:
            _ACTIVE.discard(proc.pid)
    # Background children may hold the pipes open; wait briefly, then answer without them.
    for t in helpers[:2]:
        t.join(GRACE)
    if timed_out:
        _kill_group(proc.pid)
    if _SEAL is not None:
        _sweep(user)
    stdout, cut_out = captures[0].encoded()
    stderr, cut_err = captures[1].encoded()
    return {
        "exit_code": 128 - code if code < 0 else code,
        "stdout": stdout,
        "stderr": stderr,
        "timed_out": timed_out,
        "truncated": cut_out or cut_err,
        "duration": time.monotonic() - started,
    }


def _sweep(user):
    """After a sealed command (a checker's), when no other runs: no process it left behind
    (a `setsid` child escapes its group) and nothing it left in the user's HOME or /dev/shm
    (a ~/.bash_profile, a user-site .pth) is there for the next check, which may run none of
    the candidate's code."""
    with _SPAWN:
        if _ACTIVE:
            return
        _kill_leftovers()
    if user.pw_uid == 0:  # root's HOME is the image's (a root verifier's .profile, .local)
        return
    # the repositories in /work once more as the handover left them: a check's command could
    # have given one a filter or a hook that git would run in the next check; a handover that
    # fails part-way (a full workspace, say) may have left links uncut, so nothing runs after
    global _TAINTED
    try:
        import handover  # beside this file in every sandbox

        if os.path.isdir(_WORKDIR) and not os.path.islink(_WORKDIR):
            # (the host waits the command's timeout and a minute more: the command is done)
            handover.hand_over(_WORKDIR, user.pw_uid, user.pw_gid, _HANDED, seconds=40)
    except Exception as exc:  # (any failure: fail closed)
        _TAINTED = _TAINTED or f"the workspace could not be handed over again: {exc}"[:300]
    for place in (user.pw_dir, "/dev/shm"):
        if not os.path.isdir(place) or os.path.islink(place):
            continue
        try:  # (rm works below any depth; shutil.rmtree recursed once a level, and 1,500
            # folders deep raised RecursionError out of every later command)
            subprocess.run(
                [
                    "find",
                    place,
                    "-mindepth",
                    "1",
                    "-maxdepth",
                    "1",
                    "-exec",
                    "rm",
                    "-rf",
                    "--",
                    "{}",
                    "+",
                ],
                check=False,
                capture_output=True,
                timeout=_SWEEP_SECONDS,
            )
            left = os.listdir(place)
        except (OSError, subprocess.SubprocessError) as exc:
            left = [str(exc)]
        if left:  # what stays there may run in the next check: none runs
            _TAINTED = _TAINTED or f"{place} could not be emptied after a check"


def _kill_leftovers():
    """Kill every process but this one (PID 1), with _SPAWN held and nothing active. One
    kill(-1) reaches them all at once, under the kernel's task list lock, so a process that
    forks and exits to change its pid cannot slip between a listing and a kill; it repeats
    while any is still alive (a process whose leader thread exited shows Z while its other
    threads run on). A process that will not die taints the checker: every later command
    is refused (fail closed), never run beside it."""
    global _TAINTED
    deadline = time.monotonic() + 5
    while True:
        with contextlib.suppress(OSError):  # (ESRCH: nothing but us)
            os.kill(-1, signal.SIGKILL)
        left = [pid for pid in _pids() if pid != 1 and _alive(pid)]
        if not left:
            return
        if time.monotonic() > deadline:
            _TAINTED = f"process {left[0]} of an earlier check could not be stopped"
            return
        time.sleep(0.01)


def _pids():
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def _alive(pid):
    """Whether any thread of process `pid` is still something but a zombie."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any((_stat(f"/proc/{pid}/task/{task}/stat") or ["Z"])[0] != "Z" for task in tasks)


def _stat(path):
    """The fields of a /proc stat file after the command name (state, ppid, ...); None when
    it is gone."""
    try:
        with open(path) as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _wait(proc, timeout):
    """The command's exit status, asleep in poll(2) on a pidfd until it exits (Popen.wait
    with a timeout wakes every 50 ms to look); TimeoutExpired like Popen.wait."""
    try:
        fd = os.pidfd_open(proc.pid)  # (not reaped yet: the reaper leaves _ACTIVE alone)
    except (AttributeError, OSError):  # an older kernel or Python
        return proc.wait(timeout=timeout)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(min(max(0, int(timeout * 1000)), 2**31 - 1)):  # (an int in ms)
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    return proc.wait()


def _feed(fd, data):
    with contextlib.suppress(OSError), os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _kill_group(pgid):
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)


def _path(req):
    return os.path.join(_WORKDIR, req["path"])


def _as_user(fn, req):
    """Run a file operation in a forked child that has dropped to the user, so the kernel
    checks it as the user (a symlink planted in /work leads nowhere root could reach). None
    once the checker is tainted: a check that reads a file then fails, as one that runs a
    command does (a reward the candidate planted before tainting it is never read)."""
    if _TAINTED:
        raise PermissionError(errno.EACCES, f"skillbench: {_TAINTED}", req.get("path", ""))
    user = _user(req)
    if user.pw_uid == 0:
        return fn(req)
    r, w = os.pipe()
    with _SPAWN:
        pid = os.fork()
        if pid == 0:  # the child: raw system calls only, then _exit
            try:
                os.close(r)
                _drop_channel()
                with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as fh:
                    fh.write(str(_VICTIM))
                os.setgroups([])
                os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
                os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)
                try:
                    result = fn(req)
                except OSError as exc:
                    result = _os_error(exc)
                data = json.dumps(result).encode()
                while data:
                    data = data[os.write(w, data) :]
            finally:
                os._exit(0)
        _ACTIVE.add(pid)
    os.close(w)
    try:
        chunks = []
        while True:
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
        with _SPAWN:
            _ACTIVE.discard(pid)
    if not chunks:
        raise OSError(errno.EIO, "the file operation died")
    result = json.loads(b"".join(chunks))
    if result.get("errno"):
        raise OSError(result["errno"], result["message"])
    return result


def _read(req):
    # a regular file only: a read of a fifo, a pty or a device (a path the agent made lead to
    # one) can block past the host's wait, and opening a device can act; the open does not
    # wait (O_NONBLOCK) and what it opened is checked again
    path = _path(req)
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder")
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        data = fh.read(int(req.get("limit", 64 << 20)) + 1)
    if len(data) > int(req.get("limit", 64 << 20)):
        return {"error": "FileTooLarge", "message": req["path"]}
    return {"data": base64.b64encode(data).decode()}


def _write(req):
    path = _path(req)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    # a regular file only, as for _read: opening a fifo to write blocks until a reader comes
    # (O_NONBLOCK: it fails at once instead), and a device could act
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags, 0o666)
    with os.fdopen(fd, "wb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        fh.write(base64.b64decode(req["data"]))
    return {}


def _exists(req):
    # only "nothing there" is absent: a path that cannot be read (a locked folder, a loop)
    # is an error, never a missing file
    try:
        os.lstat(_path(req))
    except (FileNotFoundError, NotADirectoryError):
        return {"exists": False}
    return {"exists": True}


def _hand_over(req):
    import handover  # beside this file in every sandbox

    global _TAINTED
    user = pwd.getpwnam(req["user"])
    # the case's volumes the agent's sandbox had: what it left there crosses over as /work does
    # (and is tamed again after each sealed command, as /work is: _sweep)
    _HANDED.extend(p for p in req.get("also", ()) if p not in _HANDED)
    try:  # (the host waits 300 s)
        notes = handover.hand_over(_WORKDIR, user.pw_uid, user.pw_gid, _HANDED, seconds=200)
    except Exception as exc:  # the workspace is the agent's making: the arm fails its checks
        _TAINTED = f"the workspace could not be handed over: {exc}"[:300]
        return {"notes": [], "refused": _TAINTED}
    return {"notes": notes}


def _observer():
    import observer  # beside this file in every sandbox

    return observer


OPS = {
    "exec": _exec,
    "read": lambda req: _as_user(_read, req),
    "write": lambda req: _as_user(_write, req),
    "exists": lambda req: _as_user(_exists, req),
    "handover": _hand_over,
    "observe": lambda req: _observer().observe(req),
    "observed": lambda req: _observer().observed(req),
}


def _handle(req):
    try:
        result = OPS[req["op"]](req)
    except OSError as exc:
        result = _os_error(exc)
    except RuntimeError as exc:  # "can't start new thread": the pids limit is used up
        result = {"error": "OSError", "message": str(exc), "errno": errno.EAGAIN}
    except Exception as exc:  # the host must always get an answer
        result = {"error": type(exc).__name__, "message": str(exc)}
    result["id"] = req.get("id")
    _reply(result)


def _reap_orphans(wakeups):
    """As PID 1, wait for orphaned zombies (never for a child an exec is waiting on).

    Woken by SIGCHLD (through `wakeups`, the signal wakeup pipe) rather than polling /proc,
    so an idle sandbox costs no CPU; a burst of exits is one scan per 0.2 s. Orphans reparent
    to PID 1, so their exit signals it too."""
    me = os.getpid()
    while True:
        os.read(wakeups, 4096)  # every signal byte since the last scan: one scan covers them
        time.sleep(0.2)
        with _SPAWN:
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) in _ACTIVE:
                    continue
                fields = _stat(f"/proc/{entry}/stat")
                if fields and fields[0] == "Z" and int(fields[1]) == me:
                    with contextlib.suppress(ChildProcessError, OSError):
                        os.waitpid(int(entry), os.WNOHANG)


def _harden(user):
    """Make this root process one the sandbox's users cannot touch."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no ptrace, no /proc/1/mem, even same-uid
    # Lowering needs CAP_SYS_RESOURCE, which some hosts lack (these machines do); user
    # processes start at +1000 so the OOM killer takes them first either way.
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("-1000")
    # As PID 1, a signal without a handler is dropped when sent from inside the container;
    # Python's own SIGINT handler is the only one, so remove it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Fresh mounts (the workspace, HOME) belong to the user.
    for place in (_WORKDIR, user.pw_dir):
        with contextlib.suppress(OSError):
            if os.stat(place).st_uid == 0 and user.pw_uid != 0:
                os.chown(place, user.pw_uid, user.pw_gid)


# Folders a sandbox's user can write: never on the image PATH a root script is given.
_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/home", "/logs", "/run", "/skills", "/case")


def _image_path(path):
    """The image's PATH (its `ENV`) without a folder the agent wrote or could write: a root
    script finds by name only what the image put there (checker_env.py ROOT_SCRIPT)."""
    kept = []
    for entry in path.split(":"):
        real = os.path.normpath(entry) if entry.startswith("/") else ""
        places = (_WORKDIR, *_WRITABLE)
        if real and not any(real == p or real.startswith(p.rstrip("/") + "/") for p in places):
            kept.append(real)
    return ":".join(kept)


def _checker_path():
    """A checker is created with its fixed PATH aside (checker_env.py): put it in place, and
    keep the image's own for the scripts written for root."""
    fixed = os.environ.pop("SKILLBENCH_CHECK_PATH", None)
    if fixed is not None:
        os.environ["SKILLBENCH_IMAGE_PATH"] = _image_path(os.environ.get("PATH", ""))
        os.environ["PATH"] = fixed


def main():
    global _conn, _USER, _WORKDIR, _SEAL
    path = sys.argv[sys.argv.index("--listen") + 1] if "--listen" in sys.argv else ""
    if "--seal" in sys.argv:
        _SEAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seal.py")
    if "--workdir" in sys.argv:
        _WORKDIR = sys.argv[sys.argv.index("--workdir") + 1]
    _checker_path()
    name = sys.argv[sys.argv.index("--user") + 1] if "--user" in sys.argv else "root"
    _USER = pwd.getpwnam(name)
    _harden(_USER)
    import portrelay  # beside this file in every sandbox

    # --relay PORT, once per relay (the model broker's, the egress proxy's); the first reply
    # relayed in arms the skill observer (observer.py)
    ports = [int(sys.argv[i + 1]) for i, a in enumerate(sys.argv) if a == "--relay"]
    relays = [portrelay.Relay(port, _reply, _observer().OBSERVER.arm) for port in ports]
    if "--stdio" in sys.argv:
        _conn = _Stdio()
    else:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        server.bind(path)
        server.listen(1)
        _conn, _ = server.accept()
        server.close()
        os.unlink(path)  # one client only: the host
    # SIGCHLD needs a handler (any) for Python to write its byte to the wakeup pipe
    wakeups, wake = os.pipe()
    os.set_blocking(wake, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake, warn_on_full_buffer=False)
    threading.Thread(target=_reap_orphans, args=(wakeups,), daemon=True).start()
    lines = _conn.makefile("rb")
    if isinstance(_conn, _Stdio):
        # the host attaches after the start: it says so with a line, or "ready" goes nowhere
        next(lines, None)
    _reply({"id": 0, "ready": True, "pid": os.getpid()})
    # only now: in a pod the loopback is shared, and a connection a service made while the
    # host waited for "ready" would answer before it (the sandbox would never start); bound
    # already, so what connects early waits in the backlog
    for relay in relays:
        threading.Thread(target=relay.serve, daemon=True).start()
    for line in lines:
        if not line.strip():
            continue
        req = json.loads(line)
        if relays and req.get("op") in ("relay_data", "relay_close"):
            portrelay.Relay.send(req)  # in order, no reply: a stream, not a request
            continue
        try:
            threading.Thread(target=_handle, args=(req,), daemon=True).start()
        except RuntimeError:
            _handle(req)


if __name__ == "__main__":
    main()
