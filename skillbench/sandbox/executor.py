"""The in-sandbox executor: the container's PID 1, serving JSON lines on a unix socket.

It is the container's main process, so a command costs a socket round trip instead of a new
`podman exec` (~100 ms, and ~0.13 CPU-s for the podman CLI). As PID 1 it cannot be killed
from inside the container (not even by `kill -9 -1`), and it reaps orphaned processes so
zombies never use up the pids limit. It listens on the socket path given with --listen (a
folder bind-mounted from the host), takes exactly one connection and then removes the path.
This file must stay standard-library only and run on the image's python3.

Request: {"id": n, "op": "exec"|"read"|"write"|"exists"|"reap", ...}; reply: {"id": n, ...}.
Commands run in their own session so a timeout kills the whole process group from inside.
"""

import base64
import contextlib
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

_OUT = threading.Lock()
GRACE = 0.5  # seconds to wait for output from background children after the command exits
_conn = None  # the host's connection
# Children we wait for ourselves; the reaper must not take their exit status.
_SPAWN = threading.Lock()
_ACTIVE: set = set()


def _reply(message):
    data = (json.dumps(message) + "\n").encode()
    with _OUT:
        _conn.sendall(data)  # type: ignore[union-attr]  # set before the first reply


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


def _exec(req):
    started = time.monotonic()
    env = dict(os.environ)
    env.update(req.get("env") or {})
    cmd = req["cmd"]
    argv = ["/bin/bash", "-c", cmd] if isinstance(cmd, str) else cmd
    stdin = base64.b64decode(req["stdin"]) if req.get("stdin") is not None else None
    cap = int(req.get("cap", 1 << 20))
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
                cwd=req.get("cwd") or "/work",
                env=env,
                stdin=in_r if in_r is not None else subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                start_new_session=True,
            )
            _ACTIVE.add(proc.pid)
    finally:
        for fd in (out_w, err_w, in_r):
            if fd is not None:
                os.close(fd)
    timed_out = False
    try:
        code = proc.wait(timeout=float(req.get("timeout", 120)))
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


def _feed(fd, data):
    with contextlib.suppress(OSError), os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _kill_group(pgid):
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)


def _path(req):
    return os.path.join("/work", req["path"])


def _read(req):
    with open(_path(req), "rb") as fh:
        data = fh.read(int(req.get("limit", 64 << 20)) + 1)
    if len(data) > int(req.get("limit", 64 << 20)):
        return {"error": "FileTooLarge", "message": req["path"]}
    return {"data": base64.b64encode(data).decode()}


def _write(req):
    path = _path(req)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(base64.b64decode(req["data"]))
    return {}


def _exists(req):
    return {"exists": os.path.lexists(_path(req))}


def _others():
    me = os.getpid()
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) != me]


def _reap(req):
    """Kill every process but this executor (PID 1) before the checks run, so nothing the
    agent left running can change what they see. kill(-1) from PID 1 reaches all the others;
    it is repeated because a fork bomb can fork between rounds."""
    killed = len(_others())
    for _ in range(100):
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        time.sleep(0.01)
        if not _others():
            break
    return {"killed": killed}


OPS = {"exec": _exec, "read": _read, "write": _write, "exists": _exists, "reap": _reap}


def _handle(req):
    try:
        result = OPS[req["op"]](req)
    except OSError as exc:
        result = {
            "error": type(exc).__name__,
            "message": exc.strerror or str(exc),
            "errno": exc.errno,
        }
    except RuntimeError as exc:  # "can't start new thread": the pids limit is used up
        result = {"error": "OSError", "message": str(exc), "errno": errno.EAGAIN}
    except Exception as exc:  # the host must always get an answer
        result = {"error": type(exc).__name__, "message": str(exc)}
    result["id"] = req.get("id")
    _reply(result)


def _reap_orphans():
    """As PID 1, wait for orphaned zombies (never for a child an exec is waiting on)."""
    me = os.getpid()
    while True:
        time.sleep(0.2)
        with _SPAWN:
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) in _ACTIVE:
                    continue
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                if fields[0] == "Z" and int(fields[1]) == me:
                    with contextlib.suppress(ChildProcessError, OSError):
                        os.waitpid(int(entry), os.WNOHANG)


def main():
    global _conn
    path = sys.argv[sys.argv.index("--listen") + 1]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server.bind(path)
    server.listen(1)
    _conn, _ = server.accept()
    server.close()
    os.unlink(path)  # one client only: the host
    threading.Thread(target=_reap_orphans, daemon=True).start()
    _reply({"id": 0, "ready": True, "pid": os.getpid()})
    for line in _conn.makefile("rb"):
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("op") == "reap":  # inline: it must work even when no thread can start
            _handle(req)
            continue
        try:
            threading.Thread(target=_handle, args=(req,), daemon=True).start()
        except RuntimeError:
            _handle(req)


if __name__ == "__main__":
    main()
