"""An arm's workspace on podman: a tmpfs volume used as /work by the arm's sandbox and then by
its checker. The provider (podman.py) makes one per arm and removes what is left of them.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from typing import TYPE_CHECKING, Any

from skillbench.sandbox.base import UIDS, SandboxError, parse_size

if TYPE_CHECKING:
    from skillbench.sandbox.podman.host import PodmanHost

_WS_IDS = itertools.count(1)


async def make_workspace(provider: PodmanHost, size: str, owner: str) -> PodmanWorkspace:
    """A tmpfs volume: a kernel-enforced size (ENOSPC past it) on rootful podman 4.3,
    where neither `--storage-opt size` nor volume quotas work without XFS project quotas.
    Its data lives while a container holding it runs (the checker starts before the
    agent's sandbox is removed)."""
    name = f"skillbench-ws-{os.getpid()}-{next(_WS_IDS)}-{os.urandom(3).hex()}"
    blocks = max(1, parse_size(size) // os.sysconf("SC_PAGE_SIZE"))
    uid = UIDS[owner]
    # `size=` in a volume's options asks podman for a quota it refuses here; `nr_blocks`
    # is the same tmpfs limit in pages, passed through to mount(2) untouched.
    options = {
        "type": "tmpfs",
        "device": "tmpfs",
        "o": f"nr_blocks={blocks},uid={uid},gid={uid},mode=0755,nosuid,nodev",
    }
    labels = provider.labels

    def make() -> None:
        with provider._creation():
            try:
                provider.client().volumes.create(
                    name, driver="local", driver_opts=options, labels=labels
                )
            except Exception as exc:
                raise SandboxError(f"could not create a workspace volume: {exc}") from exc

    await asyncio.to_thread(make)
    found = PodmanWorkspace(provider, name)
    provider._workspaces.add(found)
    return found


class PodmanWorkspace:
    """A tmpfs volume used as /work by an arm's sandbox and then by its checker."""

    def __init__(self, provider: PodmanHost, name: str):
        self.provider = provider
        self.name = name
        self._closed = False

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.provider._removed_workspaces.add(self.name)  # (before: see _create_started)
        try:
            await asyncio.to_thread(self._remove)
        finally:
            self.provider._workspaces.discard(self)

    def _remove(self) -> None:
        try:
            remove_volume(self.provider.client(), self.name)
        except Exception as exc:  # anything else is swept by the provider's close, or next start
            raise SandboxError(f"could not remove workspace {self.name}: {exc}") from exc


def remove_volume(client: Any, name: str) -> None:
    """Remove a volume no container uses any more; gone already is fine. Never forced: podman
    4.3's `volume rm --force` holds the volume's lock while it locks each container using it,
    the reverse of every other path (a container's cleanup locks the container, then its
    volumes to unmount them), and the two deadlock, wedging every podman command on the host
    (podman#23613). Its containers are removed first, so "in use" is an error, raised."""
    try:
        client.volumes.remove(name, force=False)
    except Exception as exc:
        if "no such volume" not in str(exc).lower() and "404" not in str(exc):
            raise
