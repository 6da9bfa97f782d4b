"""RT5-EG (redteam5): the egress proxy's one-site, one-request rule is skipped inside a CONNECT
tunnel whenever the tunnel's first bytes do not look like "a letter, then a space within 16
bytes" (egress._inner returns asked=None and _pipe copies the tunnel raw, unframed):

1. a leading CRLF before the request line (RFC 9112 §2.2: servers SHOULD ignore it; nginx and
   llhttp do);
2. the request line split over two TCP segments ("G", then "ET / ...");
3. an absolute-form request-target inside the tunnel (`GET http://internal.example/ ...` with
   `Host: <allowed>`): the proxy checks only Host, and RFC 9112 §3.2.2 has the server take
   the target's host over Host.
4. (plain, no tunnel) header lines ended by a bare LF: the proxy splits the head on CRLF only,
   so `X: y\nConnection: keep-alive\nContent-Length: 0` is one header `X` to it and three to
   the upstream (Python's http.server reads the first Connection and Content-Length): the
   declared body is a second request, to another site, on a kept-alive connection.

Run: PYTHONPATH=. .venv/bin/pytest attacks/redteam5/test_egress_tunnel_bypass.py
Expected: internal.example never reaches the upstream. Observed: it does, in each case (the log
line says allowed with asked None in 1 and 2).
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from skillbench.egress import EgressProxy
from tests.test_egress_one_request import _talk, _vhost_server


def _proxy(tmp_path: Path, port: int) -> EgressProxy:
    return EgressProxy([f"127.0.0.1:{port}"], tmp_path / "net.jsonl", "agent").start()


def test_a_leading_crlf_in_a_tunnel_skips_the_host_check(tmp_path: Path) -> None:
    up, port, seen = _vhost_server(honour_close=False)
    proxy = _proxy(tmp_path, port)
    a = f"127.0.0.1:{port}"
    try:
        _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\n\r\nGET /secret HTTP/1.1\r\n"
            "Host: internal.example\r\n\r\n".encode(),
        )
    finally:
        proxy.stop()
        up.close()
    assert all(h != b"internal.example" for h, _ in seen), seen


def test_a_request_line_split_over_segments_skips_the_host_check(tmp_path: Path) -> None:
    up, port, _ = _vhost_server(honour_close=False)
    proxy = _proxy(tmp_path, port)
    a = f"127.0.0.1:{port}"
    try:
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.sendall(f"CONNECT {a} HTTP/1.1\r\n\r\n".encode())
            s.recv(4096)  # 200 Connection established
            s.sendall(b"G")
            time.sleep(0.5)
            s.sendall(b"ET /secret HTTP/1.1\r\nHost: internal.example\r\n\r\n")
            s.settimeout(3)
            reply = s.recv(4096)
    finally:
        proxy.stop()
        up.close()
    assert b"internal.example" not in reply, reply


def test_an_absolute_form_target_in_a_tunnel_names_another_site(tmp_path: Path) -> None:
    lines: list[bytes] = []
    up = socket.create_server(("127.0.0.1", 0))
    port = up.getsockname()[1]

    def serve() -> None:
        c, _ = up.accept()
        with c:
            lines.append(c.makefile("rb").readline())
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    proxy = _proxy(tmp_path, port)
    a = f"127.0.0.1:{port}"
    try:
        _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\nGET http://internal.example/secret HTTP/1.1\r\n"
            f"Host: {a}\r\n\r\n".encode(),
        )
    finally:
        proxy.stop()
        up.close()
    assert lines and b"internal.example" not in lines[0], lines


def test_bare_lf_header_lines_smuggle_a_second_request(tmp_path: Path) -> None:
    hosts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            hosts.append(str(self.headers.get("Host")))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            reply = f"site {self.headers.get('Host')}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        do_GET = do_POST = _any

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    proxy = _proxy(tmp_path, port)
    a = f"127.0.0.1:{port}"
    smuggled = b"GET /secret HTTP/1.1\r\nHost: internal.example\r\n\r\n"
    try:
        out = _talk(
            proxy.port,
            f"POST http://{a}/ HTTP/1.1\r\nHost: {a}\r\nX: y\nConnection: keep-alive\n"
            f"Content-Length: 0\r\nContent-Length: {len(smuggled)}\r\n\r\n".encode()
            + smuggled,
        )
    finally:
        proxy.stop()
        server.shutdown()
    assert "internal.example" not in hosts, (hosts, out)
