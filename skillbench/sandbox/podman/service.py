"""The podman REST service skillbench talks to: one configured for it, or its own.

Which one, and in what order, is connection.py (SKILLBENCH_PODMAN_URL, CONTAINER_HOST,
podman's default connection). A configured service is reused and never stopped by us; a
SKILLBENCH_PODMAN_URL that no longer answers (a test's service gone) is passed over, any other
configured one that does not answer is refused, since the user asked for it. With nothing
configured, skillbench starts `podman system service --time=0` itself (no systemd socket
activation here; `--time=0`, or it exits when idle) and stops it when done.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from podman import PodmanClient

from skillbench.sandbox.base import SandboxError, SandboxSpec
from skillbench.sandbox.podman.connection import (
    NO_LOCAL_SERVICE,
    OWN,
    URL_ENV,
    Connection,
)
from skillbench.sandbox.podman.hostcli import host_env
from skillbench.sandbox.podman.imageload import LOAD_TIMEOUT, ServiceImages
from skillbench.sandbox.podman.reach import chosen, client_of, ping, unanswered
from skillbench.sandbox.runtime import die_with_parent, runtime_dir
from skillbench.util.scrub import without_secrets

_OWN_IDS = itertools.count()


class PodmanService:
    """A podman API endpoint; `owned` when this process started it (and so stops it)."""

    def __init__(
        self, connection: Connection | str, process: subprocess.Popen[bytes] | None = None
    ):
        if isinstance(connection, str):
            connection = Connection(connection, OWN if process else URL_ENV)
        self.connection = connection
        self.url = connection.url
        self._process = process
        self._images: ServiceImages | None = None
        self._images_lock = threading.Lock()

    def client(self, timeout: float, **options: Any) -> PodmanClient:
        return client_of(self.connection, timeout, **options)

    def ensure_image(self, name: str) -> str:
        """`name`, made present in the service: where it has storage of its own, this host's
        image is loaded into it on first use (imageload.py); returned for the create call."""
        if not self.connection.shares_filesystem:
            with self._images_lock:
                if self._images is None:  # a client of its own: a load takes minutes
                    self._images = ServiceImages(self.client(LOAD_TIMEOUT), self.connection)
            self._images.ensure(name)
        return name

    def ensured(self, spec: SandboxSpec) -> SandboxSpec:
        """`spec`, its image made present in the service (ensure_image)."""
        self.ensure_image(spec.image)
        return spec

    @property
    def pid(self) -> int | None:
        """The service's process id when this process started it."""
        return None if self._process is None else self._process.pid

    @property
    def owned(self) -> bool:
        return self._process is not None

    @classmethod
    def start_or_reuse(
        cls, *, ready_timeout: float = 15.0, host_storage: bool = False
    ) -> PodmanService:
        """Reuse the configured service (connection.py), else start our own. `host_storage`:
        a service over the images the host's podman CLI builds with (hostcli.py), which on
        Linux is our own when the configured one has storage of its own (a pull that a
        build then uses lands there)."""
        connection = chosen()
        if host_storage and sys.platform == "linux" and connection is not None:
            connection = connection if connection.shares_filesystem else None
        if connection is not None and connection.source != URL_ENV:
            problem = unanswered(connection, 10)
            if problem:
                raise SandboxError(problem)
        if connection is not None:
            return cls(connection)
        if sys.platform != "linux":  # podman there is a remote client: no `system service`
            raise SandboxError(NO_LOCAL_SERVICE)
        if shutil.which("podman") is None:
            raise SandboxError("podman is not installed; run `make setup` or `skillbench doctor`")
        # (one process may run two: a pull's beside the run's; each has its own socket)
        sock = runtime_dir() / f"podman-{os.getpid()}-{next(_OWN_IDS)}.sock"
        sock.unlink(missing_ok=True)
        url = f"unix://{sock}"
        log = sock.with_suffix(".log").open("wb")
        process = subprocess.Popen(
            ["podman", "system", "service", "--time=0", url],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C to skillbench must not kill it mid-cleanup
            cwd=runtime_dir(),  # conmon writes files (an `oom` marker) into its cwd
            env=without_secrets(host_env()),  # the API keys stay with skillbench; never remote
            preexec_fn=die_with_parent,  # but a crashed or killed skillbench must not leak it
        )
        log.close()
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SandboxError(
                    f"podman system service exited ({process.returncode}); see {log.name}"
                )
            if sock.exists() and ping(url, timeout=1.0):
                return cls(Connection(url, OWN), process)
            time.sleep(0.02)
        process.kill()
        raise SandboxError(f"podman system service did not answer within {ready_timeout:.0f} s")

    def stop(self, grace: float = 5.0) -> None:
        """Stop the service if we started it: killed if it has not ended `grace` s on."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(grace)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None
        if self.url.startswith("unix://"):
            sock = Path(self.url[len("unix://") :])
            sock.unlink(missing_ok=True)
            sock.with_suffix(".log").unlink(missing_ok=True)  # kept only when it failed
