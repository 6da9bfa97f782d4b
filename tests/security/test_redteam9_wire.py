"""Fifth outside review (issue 38, EG1/BR7/R1/R2 variants): a request target the egress
proxy could not parse killed its connection thread with a traceback on the host and logged
nothing of what was asked; a header name that is not a token (`Host\\x00`) went upstream; the
broker and the relay sent a content type given twice (the provider picks one) or one that is
not the JSON they checked; the relay passed the key owner's organisation headers back to a
worker; a worker's file name holding NUL raised instead of being refused."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from skillbench.broker.server import Broker, allowed_models
from skillbench.cluster.placement import ClusterError, _write
from skillbench.cluster.relay import DriverRelay
from skillbench.sandbox.egress import EgressProxy
from tests.broker.test_broker_access import _REPLY

_BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


class _Provider(BaseHTTPRequestHandler):
    """Records each request's headers as sent (duplicates kept) and answers with the key
    owner's organisation headers, as a provider does."""

    protocol_version = "HTTP/1.1"
    seen: list[list[tuple[str, str]]]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.seen.append([(k.lower(), v) for k, v in self.headers.items()])
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("anthropic-organization-id", "org-of-the-key-owner")
        self.send_header("openai-organization", "org-of-the-key-owner")
        self.send_header("openai-project", "proj-of-the-key-owner")
        self.send_header("Content-Length", str(len(_REPLY)))
        self.end_headers()
        self.wfile.write(_REPLY)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[tuple[str, list[list[tuple[str, str]]]]]:
    seen: list[list[tuple[str, str]]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("P", (_Provider,), {"seen": seen}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", seen
    server.shutdown()
    server.server_close()


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def _post(broker: Broker, content_types: list[bytes]) -> bytes:
    body = json.dumps(_BODY).encode()
    head = (
        b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n"
        + b"".join(content_types)
        + f"x-api-key: {broker.client_key}\r\nanthropic-version: 2023-06-01\r\n".encode()
        + b"content-length: %d\r\n\r\n" % len(body)
    )
    return _raw(broker.port, broker.preamble + head + body)


def test_the_broker_sends_one_json_content_type(provider, tmp_path: Path) -> None:
    url, seen = provider
    broker = Broker(
        upstream=url,
        api_key="sk-real-owner-key",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    try:
        twice = _post(
            broker,
            [b"Content-Type: application/json\r\n", b"content-type: application/x-protobuf\r\n"],
        )
        assert twice.startswith(b"HTTP/1.1 400") and b"given twice" in twice
        assert seen == []  # nothing reached the provider
        other = _post(broker, [b"content-type: application/x-protobuf\r\n"])
        assert other.startswith(b"HTTP/1.1 200")
        ((sent),) = seen
        assert [v for k, v in sent if k == "content-type"] == ["application/json"]
        # and the key owner's organisation is not the sandbox's to learn
        assert b"org-of-the-key-owner" not in other and b"proj-of" not in other
    finally:
        broker.stop()


def test_the_relay_keeps_the_key_owners_headers_from_workers(provider, monkeypatch) -> None:
    url, seen = provider
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-driver-key")
    relay = DriverRelay(models=allowed_models("anthropic/claude-sonnet-4-6"), budget=1.0).start()
    try:
        at = f"http://127.0.0.1:{relay.port}/anthropic/v1/messages"
        resp = httpx.post(
            at,
            content=json.dumps(_BODY),
            headers={"x-api-key": relay.token, "content-type": "text/plain"},
            timeout=30,
        )
        assert resp.status_code == 200
        assert not {"anthropic-organization-id", "openai-organization", "openai-project"} & {
            k.lower() for k in resp.headers
        }
        ((sent),) = seen
        assert [v for k, v in sent if k == "content-type"] == ["application/json"]
    finally:
        relay.stop()


@pytest.mark.parametrize(
    "request_",
    [
        b"GET http://127.0.0.1:abc/ HTTP/1.1\r\nHost: 127.0.0.1:abc\r\n\r\n",
        b"GET http://127.0.0.1:99999/ HTTP/1.1\r\nHost: 127.0.0.1:99999\r\n\r\n",
        b"GET http://[::1/ HTTP/1.1\r\nHost: x\r\n\r\n",
        b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\nGET http://[::1/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
        b"GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nHost\x00: evil.example\r\n\r\n",
        # sixth review: a value Python's strip() reads one way and an upstream another
        b"POST http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nTransfer-Encoding: chunked\x0b\r\n\r\n",
        b"POST http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 2\x0c\r\n\r\nab",
    ],
    ids=["port-name", "port-range", "ipv6-open", "tunnel-ipv6-open", "nul-name", "vt", "ff"],
)
def test_a_target_or_header_the_proxy_cannot_read_is_refused_and_logged(
    tmp_path: Path, request_: bytes, capfd
) -> None:
    log = tmp_path / "net.jsonl"
    site = socket.create_server(("127.0.0.1", 0))  # the allowed site (a tunnel reaches it)
    port = site.getsockname()[1]
    proxy = EgressProxy([f"127.0.0.1:{port}"], log, "agent").start()
    try:
        reply = _raw(proxy.port, request_.replace(b"127.0.0.1:9", b"127.0.0.1:%d" % port))
        for _ in range(100):  # the line is written as the connection closes
            if log.exists() and log.read_text().endswith("\n"):
                break
            time.sleep(0.05)
    finally:
        proxy.stop()
        site.close()
    assert b"HTTP/1.1 400" in reply or b"HTTP/1.1 403" in reply, reply
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    refused = [e for e in entries if e.get("status") in (400, 403)]
    assert len(refused) == 1 and refused[0]["allowed"] is False
    if b"[::1" in request_ or b":abc" in request_ or b"99999" in request_:
        assert refused[0]["asked"], refused  # what was asked is kept
    assert "Traceback" not in capfd.readouterr().err


def test_a_workers_file_name_with_nul_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="not this session's"):
        _write(
            tmp_path,
            "workspaces/c1.candidate.0/a\x00b",
            b"forged",
            True,
            None,
            "c1.candidate.0",
        )
