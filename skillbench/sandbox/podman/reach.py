"""Reaching a podman service: a client for a connection (an ssh:// one through this process's
tunnel), why one does not answer, and which configured service to use."""

from __future__ import annotations

import os
from typing import Any

from podman import PodmanClient

from skillbench.sandbox.base import SandboxError
from skillbench.sandbox.podman.connection import URL_ENV, Connection, configured, shown
from skillbench.sandbox.podman.tunnel import tunnel


def client_of(connection: Connection, timeout: float, **options: Any) -> PodmanClient:
    """A client for `connection`: an ssh:// one through this process's tunnel to it
    (tunnel.py: podman-py's own ssh transport is not used), any other directly."""
    if connection.transport == "ssh":
        local = tunnel(connection)
        return PodmanClient(base_url=local.url, timeout=timeout, **options)
    return PodmanClient(base_url=connection.url, timeout=timeout, **options)


def unanswered(connection: Connection, timeout: float = 2.0) -> str:
    """Why no podman service answers at `connection` (one line), "" when one does."""
    try:  # ssh itself may fail first: the tunnel then says how
        local = tunnel(connection) if connection.transport == "ssh" else None
    except SandboxError as exc:
        return str(exc)
    try:
        with PodmanClient(base_url=local.url if local else connection.url, timeout=timeout) as c:
            if c.ping():
                return ""
    except Exception:
        pass
    if local is not None:
        return local.unanswered()
    return (
        f"the podman service at {shown(connection.url)} ({connection.source}) does not "
        "answer; start it (`podman machine start` for a podman machine) or point "
        "CONTAINER_HOST at one that runs"
    )


def ping(url: str | Connection, timeout: float = 2.0) -> bool:
    """True when a podman service answers at `url`."""
    connection = url if isinstance(url, Connection) else Connection(url, URL_ENV)
    return not unanswered(connection, timeout)


def chosen() -> Connection | None:
    """The configured service to use (None: start our own); a SKILLBENCH_PODMAN_URL that no
    longer answers is passed over for the next in line."""
    connection = configured()
    if connection is not None and connection.source == URL_ENV and not ping(connection):
        connection = configured({k: v for k, v in os.environ.items() if k != URL_ENV})
    return connection
