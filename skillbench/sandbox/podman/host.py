"""What the provider's parts (container.py, pod.py, workspace.py) see of the provider: it is
built on them (provider.py), so they know it only by this shape, from below."""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from podman import PodmanClient

from skillbench.sandbox.podman.channel import Channel
from skillbench.sandbox.podman.service import PodmanService


class PodmanHost(Protocol):
    service: PodmanService
    channel: Channel
    labels: dict[str, str]
    # what the provider removes at the end, kept up by the parts that make and remove them
    # (their own types stand above this module)
    _live: set[Any]
    _workspaces: set[Any]
    _pods: dict[str, Any]
    _removed_workspaces: set[str]

    def client(self) -> PodmanClient: ...

    def _creation(self) -> contextlib.AbstractContextManager[None]: ...

    def stop_container(self, ctr_id: str) -> None: ...

    def remove_container(self, ctr_id: str) -> None: ...
