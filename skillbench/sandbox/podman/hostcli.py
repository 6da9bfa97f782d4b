"""The host's own podman CLI, for what is built on the host: images, imports, checks.

podman (4 and later, on Linux too) turns into a remote client whenever CONTAINER_HOST or
CONTAINER_CONNECTION is set, so under `CONTAINER_HOST=ssh://…` a plain `podman build` would
go to that service over podman's own ssh. skillbench's host-side calls run without those
variables instead: on Linux they use this host's storage, on macOS and Windows podman's
default (machine) connection. A service with storage of its own then gets the images
through the API (imageload.py), checked there by ID.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

_REMOTE = ("CONTAINER_HOST", "CONTAINER_SSHKEY", "CONTAINER_CONNECTION")


def host_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (the environment) without what would make podman a remote client."""
    return {k: v for k, v in (os.environ if base is None else base).items() if k not in _REMOTE}
