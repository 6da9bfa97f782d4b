"""The host side of a sandbox's port relays (portrelay.py inside): loopback connections in the
sandbox, bridged to the host target. Each arrives as events on the executor channel
("open", "data", "close", by `sid`) and goes on to its relay's `host:target`; what the target
answers goes back as relay_data / relay_close requests. The channel itself is container.py's.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import Any

from skillbench.sandbox.base import Relay


class Bridges:
    """The relayed connections of one sandbox, each bridged to its host target."""

    def __init__(
        self,
        relays: tuple[Relay, ...],
        send: Callable[[dict[str, Any]], None],
        drain: Callable[[], Awaitable[None]],
        held: bool = False,
    ):
        self._relays = {r.port: r for r in relays}  # by the port inside the sandbox
        self._send = send  # one request to the executor
        self._drain = drain
        self._inbound: dict[int, asyncio.Queue[bytes | None]] = {}  # relayed connections
        self._tasks: set[asyncio.Task[None]] = set()
        # a checker's relays carry nothing until the handover: in an arm's pod the agent's
        # processes share its loopback until then, and must not reach the verifier's proxy
        self.held = held

    def relayed(self, event: dict[str, Any]) -> None:
        """One relay event from the executor."""
        sid = event["sid"]
        if event["event"] == "open":
            if self.held:
                self._send({"op": "relay_close", "sid": sid})
                return
            inbound: asyncio.Queue[bytes | None] = asyncio.Queue()
            self._inbound[sid] = inbound
            relay = self._relays[event["port"]]
            task = asyncio.get_running_loop().create_task(self._bridge(relay, sid, inbound))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif sid in self._inbound:
            data = base64.b64decode(event["data"]) if event["event"] == "data" else None
            self._inbound[sid].put_nowait(data)

    async def _bridge(self, relay: Relay, sid: int, inbound: asyncio.Queue[bytes | None]) -> None:
        try:
            reader, writer = await asyncio.open_connection(relay.host, relay.target)
        except OSError:
            self._send({"op": "relay_close", "sid": sid})
            return
        if relay.preamble:
            writer.write(relay.preamble)

        async def up() -> None:  # sandbox -> host
            while (chunk := await inbound.get()) is not None:
                writer.write(chunk)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()

        async def down() -> None:  # host -> sandbox
            while chunk := await reader.read(1 << 16):
                self._send(
                    {"op": "relay_data", "sid": sid, "data": base64.b64encode(chunk).decode()}
                )
                await self._drain()
            self._send({"op": "relay_close", "sid": sid})

        try:
            await asyncio.gather(up(), down())
        except (OSError, RuntimeError):
            self._send({"op": "relay_close", "sid": sid})
        finally:
            self._inbound.pop(sid, None)
            writer.close()

    async def close(self) -> None:
        """End every bridge still open."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
