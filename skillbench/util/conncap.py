"""A cap on the connections a server spends a thread on (the model broker, the driver's relay,
the egress proxy): at the cap, the longest-idle connection (accepted, no request read yet) is
shut to make room, so a flood of idle connections cannot keep real requests out; then, with
none idle, the longest-waiting admitted one (past a first proof, such as the broker's
preamble, but not yet the request's own); with neither, a new connection is refused. Checked
before a thread is spent on it."""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class ConnectionCap:
    def __init__(self, cap: int):
        self.cap = cap
        self._lock = threading.Lock()
        self._idle: dict[socket.socket, float] = {}  # connections waiting for a request
        self._admitted: dict[socket.socket, float] = {}  # past a first proof, not yet busy
        self._open = 0

    @property
    def open(self) -> int:
        return self._open

    def accept(self, sock: socket.socket) -> bool:
        """Whether a new connection gets a thread (it counts as idle until busy())."""
        with self._lock:
            if self._open >= self.cap:
                tier = self._idle or self._admitted
                if not tier:
                    return False
                oldest = min(tier, key=tier.__getitem__)
                del tier[oldest]
                with contextlib.suppress(OSError):
                    oldest.shutdown(socket.SHUT_RDWR)  # its thread ends at once
            self._open += 1
            self._idle[sock] = time.monotonic()
            return True

    def admitted(self, sock: socket.socket) -> None:
        """It passed a first proof: closed to make room only when no idle one is left."""
        with self._lock:
            if self._idle.pop(sock, None) is not None:
                self._admitted[sock] = time.monotonic()

    def busy(self, sock: socket.socket) -> None:
        """Its request is read: it is no longer the one to close to make room."""
        with self._lock:
            self._idle.pop(sock, None)
            self._admitted.pop(sock, None)

    def idle(self, sock: socket.socket) -> None:
        """Its request is answered and it waits for another (keep-alive)."""
        with self._lock:
            self._idle[sock] = time.monotonic()

    def gone(self, sock: socket.socket) -> None:
        with self._lock:
            self._idle.pop(sock, None)
            self._admitted.pop(sock, None)
            self._open -= 1
