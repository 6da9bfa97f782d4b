"""A loopback port inside the sandbox relayed to the host over the executor's channel
(executor.py, beside this file in every sandbox, serves one per --relay). Standard library
only, run on the image's python3, like executor.py."""

import base64
import itertools
import queue
import socket
import threading

_RELAYED = threading.Lock()
_SIDS = itertools.count(1)
_OUTBOXES: dict = {}


class Relay:
    """Connections to a loopback port inside the sandbox, carried over the host channel.

    The sandbox has no network; a program in it (an agent CLI, or anything using the egress
    proxy) talks to 127.0.0.1:<port>, and its bytes travel as {"event": "open"|"data"|"close",
    "sid": n} messages to the host ("open" names the port), which answers with "relay_data" /
    "relay_close" requests. The host decides where they go (skillbench's model broker, the
    egress proxy); nothing else is reachable. Several relays share one numbering of
    connections, so a host request names its connection by `sid` alone.
    """

    def __init__(self, port, reply, on_reply=None):
        self.port = port
        self._reply = reply  # the executor's: one JSON line to the host
        # called before any byte from the host reaches a client (the skill observer arms)
        self._on_reply = on_reply or (lambda: None)
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))  # before any user process can take the port
        self.server.listen(64)

    def serve(self):
        while True:
            conn, _ = self.server.accept()
            outbox: queue.SimpleQueue = queue.SimpleQueue()
            with _RELAYED:
                sid = next(_SIDS)
                _OUTBOXES[sid] = outbox
            self._reply({"event": "open", "sid": sid, "port": self.port})
            threading.Thread(target=self._pump, args=(sid, conn), daemon=True).start()
            threading.Thread(target=self._deliver, args=(sid, conn, outbox), daemon=True).start()

    def _pump(self, sid, conn):
        while True:
            try:
                chunk = conn.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            self._reply({"event": "data", "sid": sid, "data": base64.b64encode(chunk).decode()})
        self._reply({"event": "close", "sid": sid})

    @staticmethod
    def send(req):
        """Queue what the host sent; a client that stops reading blocks only its own writer."""
        with _RELAYED:
            outbox = _OUTBOXES.get(req["sid"])
        if outbox is not None:
            outbox.put(req)

    def _deliver(self, sid, conn, outbox):
        try:
            while True:
                req = outbox.get()
                if req["op"] == "relay_close":
                    conn.shutdown(socket.SHUT_WR)
                    break
                self._on_reply()
                conn.sendall(base64.b64decode(req["data"]))
        except OSError:
            pass
        with _RELAYED:
            _OUTBOXES.pop(sid, None)
        conn.close()
