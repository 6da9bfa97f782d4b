"""EG2 (BROKEN, medium): the egress proxy checks the Host of a tunnel's FIRST request only;
every later request on the same kept-alive connection asks for any site (EG1 reopened).

For CONNECT, egress._inner reads the tunnel's first message (a ClientHello's SNI, or a plain
request's Host), then _pipe copies bytes both ways unread. HTTP/1.1 keeps the connection alive
by default and nothing inside a tunnel adds `Connection: close`, so `CONNECT allowed:80`, one
request with the allowed Host, then `GET /secret` with `Host: internal.example` reaches the
allowed address's other virtual host. The network log records one entry, asked = the
allowed host. (Plain proxied requests get `Connection: close` added upstream, so a pipelined
second request there depends on the server honouring it: partial, also shown below.)

Here the upstream is a vhost-style HTTP/1.1 server that honours `Connection: close` and answers
"site <Host>". Expected: the tunnel's second request is refused / never reaches the upstream,
or the log names internal.example. Observed: "site internal.example" comes back; the log has
one allowed entry asking for 127.0.0.1:PORT.
Fix: for plain HTTP inside CONNECT, parse every request on the tunnel (or refuse CONNECT to a
port-80 entry and require absolute-form requests, which are checked one by one with a proxy
that closes after each response).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

from skillbench.egress import EgressProxy


def _vhost_server() -> tuple[socket.socket, int, list[bytes]]:
    up = socket.create_server(("127.0.0.1", 0))
    hosts: list[bytes] = []

    def handle(conn: socket.socket) -> None:
        f = conn.makefile("rb")
        with conn:
            while f.readline():
                host, close = b"?", False
                while (h := f.readline()) not in (b"\r\n", b""):
                    name, _, value = h.partition(b":")
                    if name.strip().lower() == b"host":
                        host = value.strip()
                    if name.strip().lower() == b"connection" and b"close" in value.lower():
                        close = True
                hosts.append(host)
                body = b"site " + host
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                if close:
                    return

    def serve() -> None:
        while True:
            try:
                c, _ = up.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(c,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return up, up.getsockname()[1], hosts


def _talk(port: int, data: bytes) -> bytes:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(data)
    s.settimeout(1.0)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except OSError:
        pass
    s.close()
    return out


def test_a_tunnels_second_request_asks_for_another_site(tmp_path: Path) -> None:
    up, port, hosts = _vhost_server()
    log = tmp_path / "net.jsonl"
    proxy = EgressProxy([f"127.0.0.1:{port}"], log, "agent").start()
    a = f"127.0.0.1:{port}"
    try:
        tunnel = _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: {a}\r\n\r\n"
            f"GET /secret HTTP/1.1\r\nHost: internal.example\r\n\r\n".encode(),
        )
        plain = _talk(
            proxy.port,
            f"GET http://{a}/ HTTP/1.1\r\nHost: {a}\r\n\r\n"
            f"GET /secret HTTP/1.1\r\nHost: internal.example\r\n\r\n".encode(),
        )
        time.sleep(0.5)
    finally:
        proxy.stop()
        up.close()
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert b"site internal.example" not in plain  # holds: Connection: close was added
    # expected: never served, or at least logged; observed: served, logged as the allowed host
    assert b"site internal.example" not in tunnel, (tunnel, hosts, entries)
