"""A sandbox's PID 1 (its executor) as the host sees it, through a pidfd: killing it stops
the sandbox with the kernel's proof that none of its processes is left, in about a
millisecond, with no podman request and no polling (podman's own stop polls the PID every
100 ms).

The proof: when the init process of a PID namespace exits, the kernel kills every other
process in the namespace and waits until each one is released before init itself exits
(zap_pid_ns_processes); a pidfd turns readable only once its process, every thread of it,
has exited. No process leaves a PID namespace (a double fork, `setsid` or `nohup` stays in
it), so a readable pidfd of a container's PID 1 means that no process of the container runs
any more, and nothing but the host writes its /work from then on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import struct
from pathlib import Path


class InitProcess:
    """A container's PID 1, held by a pidfd (which pins it: its PID cannot name another
    process while the pidfd is open)."""

    def __init__(self, fd: int):
        self._fd: int | None = fd

    @classmethod
    def of(cls, conn: socket.socket | None, ctr_id: str) -> InitProcess | None:
        """The PID 1 of container `ctr_id`, found as the peer of `conn`, the connection to its
        executor (SO_PEERCRED: the listener's PID, as our PID namespace numbers it). None
        when it is not visible from here: a podman service in another PID namespace, or a
        channel that is not a unix socket."""
        if conn is None or conn.family != socket.AF_UNIX:
            return None
        try:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return None
        pid = struct.unpack("3i", creds)[0]
        if pid <= 0:
            return None
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return None
        # The pidfd holds whatever process has that PID now: it must be this container's
        # PID 1 (the first of its own PID namespace, in the container's cgroup).
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            cgroup = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            os.close(fd)
            return None
        nspid = next((ln.split()[1:] for ln in status.splitlines() if ln.startswith("NSpid:")), [])
        if len(nspid) < 2 or nspid[-1] != "1" or ctr_id not in cgroup:
            os.close(fd)
            return None
        return cls(fd)

    async def kill(self, timeout: float) -> bool:
        """SIGKILL it and wait until it (with every process of its namespace) is gone; False
        if that takes longer than `timeout` (a process stuck in the kernel)."""
        if self._fd is None:
            return False
        with contextlib.suppress(ProcessLookupError):  # (exited already)
            signal.pidfd_send_signal(self._fd, signal.SIGKILL)
        loop = asyncio.get_running_loop()
        gone: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not gone.done():
                gone.set_result(None)

        loop.add_reader(self._fd, readable)
        try:
            await asyncio.wait_for(gone, timeout)
            return True
        except TimeoutError:
            return False
        finally:
            loop.remove_reader(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
