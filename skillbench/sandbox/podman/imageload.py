"""Images built on this host, put into a podman service that does not share its storage.

The sandbox image, the agent variants and the case images are built by the host's podman
(`podman build`, mmdebstrap | `podman import`): offline, a remote service could not build
them (no registry to pull a base from, no mmdebstrap there). Where the service is another
machine or a VM (ssh://, tcp://, podman machine's socket), each image a sandbox needs is
checked there by ID and, when missing or different, streamed into it: `podman save` on the
host piped into the libpod load endpoint, one chunk in memory at a time, with a progress
line. Checked once per image and process; a sandbox's first use of an image loads it.
`cluster prepare` streams the driver's archive into a Ray node's service the same way
(cluster/images.py).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast
from urllib.parse import quote

from podman import PodmanClient

from skillbench.sandbox.base import SandboxError
from skillbench.sandbox.podman.connection import Connection, shown
from skillbench.sandbox.podman.hostcli import host_env

CHUNK = 1 << 20
LOAD_TIMEOUT = 1800.0  # a 600 MB agent image over a slow link
PROGRESS_EVERY = 5.0  # seconds between progress lines while an image streams


def host_image(name: str) -> tuple[str, int] | None:
    """(ID, size in bytes) of `name` in the host's podman, None when it has no such image."""
    done = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}} {{.Size}}", name],
        capture_output=True,
        text=True,
        env=host_env(),
    )
    if done.returncode != 0 or not done.stdout.strip():
        return None
    image_id, _, size = done.stdout.strip().partition(" ")
    return image_id, int(size) if size.isdigit() else 0


def service_image_id(client: PodmanClient, name: str) -> str | None:
    """The ID of `name` in the service, None when it has none."""
    response = client.api.get(f"/images/{quote(name, safe='')}/json")
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return str(response.json()["Id"])


def described(connection: Connection) -> str:
    """The service as progress lines and errors name it."""
    return f"the podman service at {shown(connection.url)} ({connection.transport})"


def saved(name: str, chunk: int = CHUNK) -> Iterator[bytes]:
    """`podman save` of this host's `name` (never a remote podman's: hostcli.py) as a stream
    of chunks of `chunk` bytes, the last one shorter."""
    with subprocess.Popen(
        ["podman", "save", "-q", "--format", "docker-archive", name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=host_env(),
    ) as save:
        assert save.stdout is not None and save.stderr is not None
        while data := save.stdout.read(chunk):
            yield data
        err = save.stderr.read().decode(errors="replace").strip()
    if save.returncode != 0:
        raise SandboxError(f"podman save {name} failed on this host: {err[-300:]}")


def send(
    client: PodmanClient,
    where: str,
    name: str,
    want: str,
    archive: Iterable[bytes],
    log: Callable[[str], None],
) -> None:
    """Stream `archive` (a `podman save` of `name`, chunk by chunk) into the service `where`
    names, saying how far it got every few seconds; SandboxError unless the service then
    holds `name` with the ID `want`."""
    sent = [0]
    started = time.monotonic()
    stop = threading.Event()

    def counted() -> Iterator[bytes]:
        for chunk in archive:
            sent[0] += len(chunk)
            yield chunk

    def progress() -> None:
        while not stop.wait(PROGRESS_EVERY):
            log(f"  {name}: {sent[0] / 1e6:.0f} MB sent, {time.monotonic() - started:.0f} s")

    ticker = threading.Thread(target=progress, daemon=True)
    ticker.start()
    try:
        response = client.api.post(
            "/images/load",
            # a generator: requests sends it chunked, one chunk in memory at a time
            data=cast(Any, counted()),
            headers={"Content-Type": "application/x-tar"},
            timeout=LOAD_TIMEOUT,
        )
        response.raise_for_status()
    except SandboxError:
        raise
    except Exception as exc:
        raise SandboxError(f"loading {name} into {where} failed: {exc}") from None
    finally:
        stop.set()
    arrived = service_image_id(client, name)
    if arrived != want:
        raise SandboxError(f"{name} has ID {arrived} in {where} after loading, not {want}")
    log(f"loaded {name} in {time.monotonic() - started:.1f} s")


def load(
    client: PodmanClient, connection: Connection, name: str, log: Callable[[str], None]
) -> None:
    """Stream the host's `name` into the service, saying how far it got every few seconds."""
    found = host_image(name)
    if found is None:
        raise SandboxError(
            f"image {name} is not on this host, so it cannot be loaded into the podman "
            f"service at {shown(connection.url)}: `skillbench image build` builds it"
        )
    image_id, size = found
    where = described(connection)
    log(f"loading {name} ({size / 1e6:.0f} MB) into {where}")
    send(client, where, name, image_id, saved(name), log)


def _progress(line: str) -> None:
    print(f"skillbench: {line}", file=sys.stderr, flush=True)


class ServiceImages:
    """Which images a service holds as this host does; loads the rest on first use. A
    service that shares this host's storage (ours, or a local one on Linux) needs none."""

    def __init__(
        self,
        client: PodmanClient,
        connection: Connection,
        log: Callable[[str], None] = _progress,
    ):
        self.client, self.connection, self.log = client, connection, log
        self._ready: set[str] = set()
        self._lock = threading.Lock()  # one load at a time: parallel sandboxes wait for it

    def ensure(self, name: str) -> bool:
        """Make the service hold the host's `name`; True when it had to be loaded."""
        if name in self._ready or self.connection.shares_filesystem:
            return False
        with self._lock:
            if name in self._ready:
                return False
            found = host_image(name)
            there = service_image_id(self.client, name)
            # (an image only the service has, pulled there, is used as it is)
            if there is None or (found is not None and there != found[0]):
                load(self.client, self.connection, name, self.log)
                self._ready.add(name)
                return True
            self._ready.add(name)
            return False


def into_service(names: list[str], log: Callable[[str], None]) -> None:
    """`skillbench image build`: put `names` into the configured service, if it has storage
    of its own (a service of our own, or a local one on Linux, is this host's podman)."""
    from skillbench.sandbox.podman.reach import chosen, client_of, unanswered

    connection = chosen()
    if connection is None or connection.shares_filesystem:
        return
    problem = unanswered(connection, 10)
    if problem:
        raise SandboxError(problem)
    with client_of(connection, LOAD_TIMEOUT) as client:
        images = ServiceImages(client, connection, log)
        for name in names:
            if not images.ensure(name):
                log(f"image {name} already in the podman service at {shown(connection.url)}")


def in_service(connection: Connection, name: str) -> bool:
    """Whether the service holds this host's `name` (doctor)."""
    from skillbench.sandbox.podman.reach import client_of

    found = host_image(name)
    with client_of(connection, 10) as client:
        there = service_image_id(client, name)
    return there is not None and (found is None or found[0] == there)
