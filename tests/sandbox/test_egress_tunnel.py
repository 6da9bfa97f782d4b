"""The egress proxy reads what a CONNECT tunnel opens with before forwarding anything
(redteam5 EG): a TLS ClientHello, or one whole HTTP/1.x request head, however it is split over
segments and after any leading empty lines; anything else is refused, never copied raw. A
tunnelled request's absolute-form target must name the tunnel's host, like its Host. A head
with a bare LF or CR is a 400, and a request without Host is never forwarded without one."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from skillbench.sandbox.egress import EgressProxy
from tests.sandbox.test_egress_one_request import _entries, _talk, _vhost_server


def _proxy(tmp_path: Path, port: int) -> EgressProxy:
    return EgressProxy([f"127.0.0.1:{port}"], tmp_path / "net.jsonl", "agent").start()


def test_a_leading_crlf_in_a_tunnel_does_not_skip_the_host_check(tmp_path: Path) -> None:
    up, port, seen = _vhost_server(honour_close=False)
    proxy = _proxy(tmp_path, port)
    a = f"127.0.0.1:{port}"
    try:
        bad = _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\n\r\nGET /secret HTTP/1.1\r\n"
            "Host: internal.example\r\n\r\n".encode(),
        )
        ok = _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: {a}\r\n\r\n".encode(),
        )
    finally:
        proxy.stop()
        up.close()
    assert b"HTTP/1.1 403" in bad, bad
    assert ok.endswith(f"site {a} got ".encode()), ok
    assert [h for h, _ in seen] == [a.encode()], seen
    assert _entries(tmp_path / "net.jsonl", 2)[0]["asked"] == "internal.example"


def _split(proxy: int, a: str, host: str) -> bytes:
    with socket.create_connection(("127.0.0.1", proxy)) as s:
        s.sendall(f"CONNECT {a} HTTP/1.1\r\n\r\n".encode())
        s.recv(4096)  # 200 Connection established
        s.sendall(b"G")
        time.sleep(0.3)
        s.sendall(b"ET /secret HTTP/1.1\r\nHo")
        time.sleep(0.3)
        s.sendall(f"st: {host}\r\n\r\n".encode())
        s.settimeout(15)  # (the proxy closes when done; slack for a loaded machine)
        out = b""
        try:
            while chunk := s.recv(4096):
                out += chunk
        except OSError:
            pass
        return out


def test_a_request_line_split_over_segments_is_read_whole(tmp_path: Path) -> None:
    up, port, seen = _vhost_server(honour_close=True)
    proxy = _proxy(tmp_path, port)
    a = f"127.0.0.1:{port}"
    try:
        bad = _split(proxy.port, a, "internal.example")
        ok = _split(proxy.port, a, a)
    finally:
        proxy.stop()
        up.close()
    assert bad.startswith(b"HTTP/1.1 403"), bad
    assert ok.endswith(f"site {a} got ".encode()), ok
    assert [h for h, _ in seen] == [a.encode()], seen


def test_what_is_not_tls_or_http_is_refused_in_a_tunnel(tmp_path: Path) -> None:
    up, port, seen = _vhost_server(honour_close=True)
    proxy = _proxy(tmp_path, port)
    a = f"127.0.0.1:{port}"
    try:
        started = time.monotonic()
        ssh = _talk(proxy.port, f"CONNECT {a} HTTP/1.1\r\n\r\nSSH-2.0-OpenSSH_9.6\r\n".encode())
        quick = time.monotonic() - started
        http2 = _talk(proxy.port, f"CONNECT {a} HTTP/1.1\r\n\r\nGET / HTTP/2\r\n\r\n".encode())
    finally:
        proxy.stop()
        up.close()
    assert b"HTTP/1.1 400" in ssh and quick < 3, (ssh, quick)
    assert b"HTTP/1.1 400" in http2, http2
    assert seen == [], seen


def test_an_absolute_form_target_in_a_tunnel_must_name_the_tunnels_host(tmp_path: Path) -> None:
    lines: list[bytes] = []
    up = socket.create_server(("127.0.0.1", 0))
    port = up.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                c, _ = up.accept()
            except OSError:
                return
            with c:
                lines.append(c.makefile("rb").readline())
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    proxy = _proxy(tmp_path, port)
    a = f"127.0.0.1:{port}"
    try:
        bad = _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\nGET http://internal.example/secret HTTP/1.1\r\n"
            f"Host: {a}\r\n\r\n".encode(),
        )
        ok = _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\nGET http://{a}/x?y HTTP/1.1\r\nHost: {a}\r\n\r\n".encode(),
        )
        _entries(tmp_path / "net.jsonl", 2)
    finally:
        proxy.stop()
        up.close()
    assert b"HTTP/1.1 403" in bad, bad
    assert b"200 OK" in ok, ok
    # the allowed one goes in origin form; the other never reaches the upstream
    assert all(b"internal.example" not in x for x in lines), lines
    assert b"GET /x?y HTTP/1.1\r\n" in lines, lines


def test_bare_lf_header_lines_are_refused(tmp_path: Path) -> None:
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
        lf = _talk(
            proxy.port,
            f"POST http://{a}/ HTTP/1.1\r\nHost: {a}\r\nX: y\nConnection: keep-alive\n"
            f"Content-Length: 0\r\nContent-Length: {len(smuggled)}\r\n\r\n".encode()
            + smuggled,
        )
        cr = _talk(
            proxy.port, f"GET http://{a}/ HTTP/1.1\r\nHost: {a}\r\nX: y\rZ: 1\r\n\r\n".encode()
        )
        tunnel = _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: {a}\r\nX: y\n\r\n".encode(),
        )
    finally:
        proxy.stop()
        server.shutdown()
    for out in (lf, cr, tunnel):
        assert b"HTTP/1.1 400" in out, out
    assert hosts == [], hosts


def test_a_request_without_host_is_asked_for_the_urls_site(tmp_path: Path) -> None:
    up, port, seen = _vhost_server(honour_close=True)
    a = f"127.0.0.1:{port}"
    proxy = EgressProxy([a], tmp_path / "net.jsonl", "agent").start()
    try:
        old = _talk(proxy.port, f"GET http://{a}/ HTTP/1.0\r\n\r\n".encode())
        new = _talk(proxy.port, f"GET http://{a}/ HTTP/1.1\r\n\r\n".encode())
        tunnel = _talk(proxy.port, f"CONNECT {a} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n".encode())
    finally:
        proxy.stop()
        up.close()
    assert old.endswith(f"site {a} got ".encode()), old
    assert new.startswith(b"HTTP/1.1 400") and b"HTTP/1.1 400" in tunnel, (new, tunnel)
    assert [h for h, _ in seen] == [a.encode()], seen
