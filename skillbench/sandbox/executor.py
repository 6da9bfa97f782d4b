"""The in-sandbox executor: one long-lived python3 process per sandbox, speaking JSON lines.

It runs inside the container (started once with `podman exec -i`), so each command costs a
pipe round trip instead of a new podman exec (~100 ms). This file must stay standard-library
only and importable by the image's python3; the host sends its source with `python3 -c`.

Request: {"id": n, "op": "exec"|"read"|"write"|"exists"|"reap", ...}; reply: {"id": n, ...}.
Commands run in their own session so a timeout kills the whole process group from inside.
"""

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

_OUT = threading.Lock()
GRACE = 0.5  # seconds to wait for output from background children after the command exits


def _reply(message):
    data = (json.dumps(message) + "\n").encode()
    with _OUT:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


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
    try:
        proc = subprocess.Popen(
            argv,
            cwd=req.get("cwd") or "/work",
            env=env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            start_new_session=True,
        )
    except OSError:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        raise
    os.close(out_w)
    os.close(err_w)
    captures = (_Capture(cap), _Capture(cap))
    readers = [
        threading.Thread(target=capture.drain, args=(fd,), daemon=True)
        for fd, capture in ((out_r, captures[0]), (err_r, captures[1]))
    ]
    for t in readers:
        t.start()
    if stdin is not None:
        threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
    timed_out = False
    try:
        code = proc.wait(timeout=float(req.get("timeout", 120)))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        code = proc.wait()
    # Background children may hold the pipes open; wait briefly, then answer without them.
    for t in readers:
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


def _feed(proc, data):
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except OSError:
        pass


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


def _reap(req):
    """Kill every process but init (PID 1) and this executor, before the checks run, so
    nothing the agent left running can change what they see."""
    keep = {1, os.getpid()}
    killed = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in keep:
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
            except OSError:
                pass
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
    except Exception as exc:  # the host must always get an answer
        result = {"error": type(exc).__name__, "message": str(exc)}
    result["id"] = req.get("id")
    _reply(result)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    _reply({"id": 0, "ready": True, "pid": os.getpid()})
    for line in sys.stdin.buffer:
        if line.strip():
            threading.Thread(target=_handle, args=(json.loads(line),), daemon=True).start()


if __name__ == "__main__":
    main()
