"""The egress proxy forwards one request per connection (redteam4 EG2): a second, kept-alive
request (which may name any other site the allowed address serves) never reaches the
upstream, in a CONNECT tunnel or not, whether or not the upstream honours `Connection:
close`, and the log names the site it asked for. A request whose framing the upstream could
read differently (the way a second request is smuggled in a body) is refused."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from skillbench.sandbox.egress import EgressProxy


def _vhost_server(honour_close: bool) -> tuple[socket.socket, int, list[tuple[bytes, bytes]]]:
    """An HTTP/1.1 server answering "site <Host> got <body>" on kept-alive connections,
    reading Content-Length and chunked bodies; (socket, port, (host, body) of each request)."""
    up = socket.create_server(("127.0.0.1", 0))
    seen: list[tuple[bytes, bytes]] = []

    def handle(conn: socket.socket) -> None:
        f = conn.makefile("rb")
        with conn:
            while f.readline():
                host, close, length, chunked = b"?", False, 0, False
                while (h := f.readline()) not in (b"\r\n", b""):
                    name, _, value = h.partition(b":")
                    name, value = name.strip().lower(), value.strip()
                    host = value if name == b"host" else host
                    close |= name == b"connection" and b"close" in value.lower()
                    length = int(value) if name == b"content-length" else length
                    chunked |= name == b"transfer-encoding"
                body = f.read(length) if length else b""
                # (a client that hangs up mid-body ends it: int(b"" or b"0") is 0)
                while chunked and (size := int(f.readline().split(b";")[0] or b"0", 16)):
                    body += f.read(size)
                    f.readline()
                while chunked and f.readline() not in (b"\r\n", b""):
                    pass  # the trailer section, through its empty line
                seen.append((host, body))
                reply = b"site " + host + b" got " + body
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(reply), reply)
                )
                if close and honour_close:
                    return

    def serve() -> None:
        while True:
            try:
                c, _ = up.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(c,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return up, up.getsockname()[1], seen


def _talk(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
        # the proxy closes after one response, so this only waits out a proxy that does not;
        # generous, since on a loaded 2-core machine a forward can take seconds
        s.settimeout(15.0)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except OSError:  # (cut, or a kept-alive upstream that never closes)
            pass
        return out


def _entries(log: Path, n: int) -> list[dict]:
    for _ in range(100):  # each line is written as its connection closes
        if log.exists() and len(lines := log.read_text().splitlines()) >= n:
            return [json.loads(x) for x in lines]
        time.sleep(0.05)
    raise AssertionError(log.read_text() if log.exists() else "no log")


@pytest.mark.parametrize("honour_close", [True, False])
def test_a_second_request_on_a_connection_never_reaches_the_upstream(
    tmp_path: Path, honour_close: bool
) -> None:
    up, port, seen = _vhost_server(honour_close)
    log = tmp_path / "net.jsonl"
    proxy = EgressProxy([f"127.0.0.1:{port}"], log, "agent").start()
    a = f"127.0.0.1:{port}"
    second = b"GET /secret HTTP/1.1\r\nHost: internal.example\r\n\r\n"
    try:
        tunnel = _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: {a}\r\n\r\n".encode() + second,
        )
        plain = _talk(
            proxy.port, f"GET http://{a}/ HTTP/1.1\r\nHost: {a}\r\n\r\n".encode() + second
        )
        entries = _entries(log, 2)
    finally:
        proxy.stop()
        up.close()
    assert b"internal.example" not in tunnel + plain, (tunnel, plain)
    assert [h for h, _ in seen] == [a.encode(), a.encode()]
    for entry in entries:
        assert entry["allowed"] is True and entry["asked"] == a
        assert entry["refused_after"] == {
            "reason": "a second request on one connection: the proxy forwards one per connection",
            "asked": "internal.example",
        }


def test_bodies_are_forwarded_whole_and_smuggling_framings_refused(tmp_path: Path) -> None:
    up, port, seen = _vhost_server(honour_close=False)
    log = tmp_path / "net.jsonl"
    proxy = EgressProxy([f"127.0.0.1:{port}"], log, "agent").start()
    a = f"127.0.0.1:{port}"
    head = f"POST http://{a}/ HTTP/1.1\r\nHost: {a}\r\n"
    smuggled = b"GET /secret HTTP/1.1\r\nHost: internal.example\r\n\r\n"
    try:
        sized = _talk(proxy.port, f"{head}Content-Length: 5\r\n\r\nhello".encode())
        chunked = _talk(
            proxy.port,
            f"{head}Transfer-Encoding: chunked\r\n\r\n3;x=y\r\nhel\r\n2\r\nlo\r\n0\r\nT: 1\r\n\r\n".encode(),
        )
        both = _talk(
            proxy.port,
            f"{head}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode()
            + smuggled,
        )
        after_chunks = _talk(
            proxy.port, f"{head}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode() + smuggled
        )
        folded = _talk(proxy.port, f"{head}X: a\r\n Transfer-Encoding: chunked\r\n\r\n".encode())
        entries = _entries(log, 5)
    finally:
        proxy.stop()
        up.close()
    assert sized.endswith(b"got hello") and chunked.endswith(b"got hello"), (sized, chunked)
    assert both.startswith(b"HTTP/1.1 400") and folded.startswith(b"HTTP/1.1 400")
    assert b"internal.example" not in after_chunks
    assert [h for h, _ in seen] == [a.encode()] * 3
    # (lines come in the order connections close: a kept-alive upstream closes late)
    assert sorted(e["allowed"] for e in entries) == [False, False, True, True, True]
    (after,) = [e["refused_after"] for e in entries if "refused_after" in e]
    assert after["asked"] == "internal.example"
