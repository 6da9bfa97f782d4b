"""The podman REST service skillbench talks to: started on its own socket, or reused.

No systemd socket activation here, so skillbench starts `podman system service --time=0`
itself (`--time=0`, or it exits when idle) and stops it when done. A service named by
SKILLBENCH_PODMAN_URL that answers a ping is reused and never stopped by us.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from podman import PodmanClient

from skillbench.sandbox.base import SandboxError
from skillbench.scrub import without_secrets

URL_ENV = "SKILLBENCH_PODMAN_URL"


def ping(url: str, timeout: float = 2.0) -> bool:
    """True when a podman service answers at `url`."""
    try:
        with PodmanClient(base_url=url, timeout=timeout) as client:
            return bool(client.ping())
    except Exception:
        return False


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGTERM it when its parent dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the service then outlives a crash, as without this


def runtime_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(base) / f"skillbench-{os.getuid()}"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


class PodmanService:
    """A podman API endpoint; `owned` when this process started it (and so stops it)."""

    def __init__(self, url: str, process: subprocess.Popen[bytes] | None = None):
        self.url = url
        self._process = process

    @property
    def pid(self) -> int | None:
        """The service's process id when this process started it."""
        return None if self._process is None else self._process.pid

    @property
    def owned(self) -> bool:
        return self._process is not None

    @classmethod
    def start_or_reuse(cls, *, ready_timeout: float = 15.0) -> PodmanService:
        """Reuse the service in SKILLBENCH_PODMAN_URL if healthy, else start our own."""
        url = os.environ.get(URL_ENV)
        if url and ping(url):
            return cls(url)
        if shutil.which("podman") is None:
            raise SandboxError("podman is not installed; run `make setup` or `skillbench doctor`")
        sock = runtime_dir() / f"podman-{os.getpid()}.sock"
        sock.unlink(missing_ok=True)
        url = f"unix://{sock}"
        log = (runtime_dir() / f"podman-{os.getpid()}.log").open("wb")
        process = subprocess.Popen(
            ["podman", "system", "service", "--time=0", url],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C to skillbench must not kill it mid-cleanup
            cwd=runtime_dir(),  # conmon writes files (an `oom` marker) into its cwd
            env=without_secrets(dict(os.environ)),  # the API keys stay with skillbench
            preexec_fn=_die_with_parent,  # but a crashed or killed skillbench must not leak it
        )
        log.close()
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SandboxError(
                    f"podman system service exited ({process.returncode}); see {log.name}"
                )
            if sock.exists() and ping(url, timeout=1.0):
                return cls(url, process)
            time.sleep(0.02)
        process.kill()
        raise SandboxError(f"podman system service did not answer within {ready_timeout:.0f} s")

    def stop(self) -> None:
        """Stop the service if we started it."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None
        if self.url.startswith("unix://"):
            sock = Path(self.url[len("unix://") :])
            sock.unlink(missing_ok=True)
            sock.with_suffix(".log").unlink(missing_ok=True)  # kept only when it failed
