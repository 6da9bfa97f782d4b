"""How the host reaches a sandbox's executor, and how the executor gets into the sandbox.

Two paths carry the same JSON-lines protocol (executor.py):

- **local**: the executor's files are bind-mounted, and its channel is a unix socket in a host
  folder bind-mounted at /run/skillbench. Only where the podman service shares this host's
  filesystem (a local service on Linux).
- **api**: nothing crosses but podman's API. The executor's files (and every read-only bind
  mount a sandbox asks for) are put into the created container with `PUT /archive` before it
  starts (its root filesystem is read-only once it runs), and the channel is an attach to the
  executor's own stdin and stdout: no tty, so podman frames what comes out with 8-byte
  headers (stream, size) and what goes in is raw. Measured here against an exec session's
  stream: the same ~0.1 ms round trip and ~130 MB/s both ways, and conmon holds the writer
  back rather than drop output when the host reads slowly; an attach needs no second process.

`channel_for` is the one switch: the local path wherever it works (it is the measured
default), the api path otherwise, `SKILLBENCH_SANDBOX_CHANNEL=api|local` to force either.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import tarfile
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from skillbench.sandbox.base import Mount, SandboxError
from skillbench.sandbox.podman.connection import Connection
from skillbench.sandbox.podman.tunnel import tunnel

CHANNEL_ENV = "SKILLBENCH_SANDBOX_CHANNEL"
Channel = Literal["local", "api"]
# In an api sandbox: the places copied in instead of mounted, one a line, for the handover,
# which must treat them as it treats mount points (handover.py reads it).
COPIED_LIST = "/opt/skillbench/copied-in"
_STDOUT = 1  # the stream byte of podman's multiplexed frames: 0 stdin, 1 stdout, 2 stderr
_LIMIT = 1 << 30  # one reply line may carry a 64 MiB file, base64-encoded


def channel_for(connection: Connection, env: Mapping[str, str] | None = None) -> Channel:
    """The executor channel for sandboxes on `connection`: local where the service shares
    this host's filesystem, api where it does not; the environment variable forces either."""
    env = os.environ if env is None else env
    forced = env.get(CHANNEL_ENV, "")
    if forced not in ("", "api", "local"):
        raise SandboxError(f"{CHANNEL_ENV}={forced!r}: use api or local (or unset it)")
    if forced == "local" and not connection.shares_filesystem:
        raise SandboxError(
            f"{CHANNEL_ENV}=local, but the podman service at {connection.url} "
            f"({connection.source}) does not share this host's filesystem: unset it or use api"
        )
    if forced:
        return forced  # type: ignore[return-value]  # (checked above)
    return "local" if connection.shares_filesystem else "api"


# --- putting files in -------------------------------------------------------------------


def copy_in(mounts: Iterable[Mount], *, listed: bool = True) -> bytes:
    """One tar, unpacked at / of a created container, holding what `mounts` would have
    bind-mounted, owned by root; plus (`listed`: a sandbox's, not a service's) COPIED_LIST
    naming their targets."""
    buf = io.BytesIO()
    targets = []
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for mount in mounts:
            if not mount.read_only:
                raise SandboxError(
                    f"{mount.source}: a writable bind mount cannot cross to a podman service "
                    f"that shares no filesystem with this host; use the local path ({CHANNEL_ENV})"
                )
            tar.add(mount.source, arcname=mount.target.lstrip("/"), filter=_as_root)
            targets.append(mount.target)
        if listed:
            # the list itself too: a checker file no agent link may lead to (docs/trust.md)
            listing = "".join(f"{t}\n" for t in (*targets, COPIED_LIST)).encode()
            info = _as_root(tarfile.TarInfo(COPIED_LIST.lstrip("/")))
            info.size, info.mode = len(listing), 0o644
            tar.addfile(info, io.BytesIO(listing))
    return buf.getvalue()


def put_in(api: Any, ctr_id: str, mounts: Iterable[Mount]) -> None:
    """Copy what `mounts` name into the created (not yet started) container `ctr_id`."""
    put = api.put(f"/containers/{ctr_id}/archive", params={"path": "/"}, data=copy_in(mounts))
    put.raise_for_status()


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # read-only for everyone but root, like the host files behind a read-only mount
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if not info.issym():
        info.mode &= 0o755
    return info


# --- the attached stream ----------------------------------------------------------------


async def _open_service(
    connection: Connection,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw connection to the service's HTTP endpoint (the attach takes it over)."""
    url = urlsplit(connection.url)
    if connection.transport == "unix":
        path = unquote(url.path) if url.path else unquote(url.netloc)
        return await asyncio.open_unix_connection(path, limit=_LIMIT)
    if connection.transport == "tcp":
        return await asyncio.open_connection(url.hostname, url.port or 80, limit=_LIMIT)
    # ssh: this process's tunnel to it (tunnel.py), opened already by the provider's client;
    # a thread, since reopening a dead one waits for ssh
    local = await asyncio.to_thread(tunnel, connection)
    return await asyncio.open_unix_connection(str(local.local), limit=_LIMIT)


async def attach(
    connection: Connection, ctr_id: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The container's PID 1 stdin (the writer, raw) and stdout (the reader, unframed).

    stderr frames are dropped: nothing the executor says there is protocol."""
    reader, writer = await _open_service(connection)
    query = "stream=true&stdin=true&stdout=true&stderr=true"
    writer.write(
        f"POST /v4.0.0/libpod/containers/{ctr_id}/attach?{query} HTTP/1.1\r\nHost: podman\r\n"
        "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n".encode()
    )
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as exc:
        writer.close()
        raise SandboxError(f"sandbox {ctr_id[:12]}: the attach was refused ({exc})") from None
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    if " 101 " not in status and " 200 " not in status:
        writer.close()
        raise SandboxError(f"sandbox {ctr_id[:12]}: the attach was refused ({status})")
    out = asyncio.StreamReader(limit=_LIMIT)
    task = asyncio.get_running_loop().create_task(_demux(reader, out))
    # the task lives as long as the connection; a reference keeps it from being collected
    _PUMPS[id(out)] = task
    task.add_done_callback(lambda _: _PUMPS.pop(id(out), None))
    return out, writer


_PUMPS: dict[int, asyncio.Task[None]] = {}


async def _demux(raw: asyncio.StreamReader, out: asyncio.StreamReader) -> None:
    """Unframe podman's multiplexed stream into `out` (stdout only) until it ends."""
    with contextlib.suppress(asyncio.IncompleteReadError, OSError):
        while True:
            header = await raw.readexactly(8)
            size = int.from_bytes(header[4:8], "big")
            payload = await raw.readexactly(size)
            if header[0] == _STDOUT:
                out.feed_data(payload)
    out.feed_eof()
