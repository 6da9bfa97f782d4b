"""Red team, round 8 (issue 38, BR1/BR7/BR8/BR2/BR3/R1/R2): the model broker, the driver's Ray
relay and the egress proxy, attacked as the agent in a sandbox or another local user would:
another session's secret, the egress proxy as a way in, folded and duplicated headers, idle
and trickling connections, streams nobody reads, server tools the earlier rounds' lists
missed, media whose tokens are not bounded by its bytes, and a worker's files. The upstream
is a recorder (what the provider would receive); the broker, relay and proxy are the real ones
on loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from skillbench.broker import server as broker_mod
from skillbench.broker.limits import Refused, read_gemini_head, read_head
from skillbench.broker.server import Broker, allowed_models
from skillbench.cluster import relay as relay_mod
from skillbench.cluster.placement import ClusterError, _write
from skillbench.cluster.relay import DriverRelay
from skillbench.models.pricing import worst_case_usd
from skillbench.sandbox import egress as egress_mod
from skillbench.sandbox.egress import EgressProxy
from tests.broker.test_broker_access import (
    _REPLY,
    upstream,  # noqa: F401  (the recording provider)
)
from tests.security.test_broker_attacks import post_as_relay
from tests.security.test_broker_billing_attacks import serve  # noqa: F401  (upstreams)

_BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


def _broker(url: str, tmp_path: Path, name: str = "x", **kw: Any) -> Broker:
    return Broker(
        upstream=url,
        api_key="sk-real-owner-key",
        model=kw.pop("model", "anthropic/claude-sonnet-4-6"),
        exchanges=tmp_path / f"{name}.jsonl",
        **kw,
    ).start()


# --- BR1: the broker is only its own session's ---------------------------------------------


def test_another_sessions_secret_or_an_ended_sessions_opens_nothing(
    upstream,  # noqa: F811
    tmp_path: Path,
) -> None:
    a = _broker(upstream[0], tmp_path, "a")
    b = _broker(upstream[0], tmp_path, "b")
    body = json.dumps(_BODY).encode()
    try:
        assert a.preamble != b.preamble
        # a second concurrent session's agent (its relay's secret) against the first's port
        with socket.create_connection(("127.0.0.1", a.port), timeout=10) as s:
            s.sendall(
                b.preamble + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
            assert s.recv(64).startswith(b"HTTP/1.1 403")
        # the secret without its line end, or with a different one, is not the secret
        for wrong in (a.preamble[:-2], a.preamble[:-2] + b"\n", b" " + a.preamble):
            with socket.create_connection(("127.0.0.1", a.port), timeout=10) as s:
                s.sendall(wrong + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n\r\n")
                assert not s.recv(64).startswith(b"HTTP/1.1 200")
        assert upstream[1] == [] and a.intruders == 4
    finally:
        b.stop()
        a.stop()
    # the session is over: its secret, replayed, reaches nothing
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", a.port), timeout=5) as s:
        s.sendall(a.preamble + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n\r\n")
        if not s.recv(64):
            raise ConnectionResetError
    assert upstream[1] == []


def test_the_broker_cannot_be_reached_through_the_egress_proxy(
    upstream,  # noqa: F811
    tmp_path: Path,
) -> None:
    # a case that lists the host's loopback (egress allows `127.0.0.1:PORT`): the agent goes
    # through the proxy to the broker's port, and the proxy opens the connection, not the relay
    broker = _broker(upstream[0], tmp_path)
    proxy = EgressProxy([f"127.0.0.1:{broker.port}"], tmp_path / "net.jsonl", "agent").start()
    try:
        body = json.dumps(_BODY).encode()
        with httpx.Client(proxy=f"http://127.0.0.1:{proxy.port}", timeout=10) as client:
            resp = client.post(f"http://127.0.0.1:{broker.port}/v1/messages", content=body)
        assert resp.status_code in (403, 502)
        assert upstream[1] == []
    finally:
        proxy.stop()
        broker.stop()


# --- BR7: what reaches the provider's headers ----------------------------------------------


def _raw(broker: Broker, head: bytes, body: bytes = b"") -> bytes:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        s.sendall(broker.preamble + head + body)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


@pytest.mark.parametrize(
    "headers",
    [
        # obs-fold: a continuation line read as a header of its own by a lax parser
        b"anthropic-version: 2023-06-01\r\n x-api-key: sk-attacker\r\n",
        b"anthropic-version: 2023-06-01\r\n\tOpenAI-Organization: org-attacker\r\n",
        # a header the sandbox lists as hop-by-hop, and the hop headers themselves
        b"Connection: keep-alive, anthropic-version, x-api-key\r\nKeep-Alive: 5\r\n",
        b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nConnection: Upgrade\r\n",
        b"TE: trailers\r\nProxy-Authorization: Basic eDp5\r\n",
        # case tricks and duplicates of the key and of the allowed headers
        b"X-API-KEY: sk-attacker\r\nx-api-key: sk-attacker2\r\nAuthorization: Bearer sk-a\r\n",
        b"OPENAI-ORGANIZATION: org-attacker\r\nopenai-project: proj-attacker\r\n",
        b"X-Goog-Api-Key: g\r\nX-Forwarded-For: 203.0.113.9\r\nForwarded: for=203.0.113.9\r\n",
    ],
    ids=["fold-key", "fold-org", "connection-list", "upgrade", "te", "keys", "org", "xff"],
)
def test_folded_listed_or_duplicated_headers_reach_the_provider_as_nothing_of_theirs(
    upstream,  # noqa: F811
    tmp_path: Path,
    headers: bytes,
) -> None:
    broker = _broker(upstream[0], tmp_path)
    body = json.dumps(_BODY).encode()
    try:
        head = (
            b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            + f"x-api-key: {broker.client_key}\r\n".encode()  # the session's own, first
            + headers
            + b"content-length: %d\r\n\r\n" % len(body)
        )
        reply = _raw(broker, head, body)
    finally:
        broker.stop()
    assert broker.unkeyed == 0  # (its own key came first: the call is the session's)
    for got in upstream[1]:  # forwarded or refused: nothing of the sandbox's gets through
        assert got["x-api-key"] == "sk-real-owner-key"
        for name in (
            "authorization",
            "x-goog-api-key",
            "openai-organization",
            "openai-project",
            "x-forwarded-for",
            "forwarded",
            "upgrade",
            "http2-settings",
            "te",
            "proxy-authorization",
            "keep-alive",
        ):
            assert name not in got, name
        assert all("attacker" not in v and "\n" not in v for v in got.values())
    assert reply.startswith(b"HTTP/1.1 ")


def test_many_or_huge_headers_are_refused_without_reaching_the_provider(
    upstream,  # noqa: F811
    tmp_path: Path,
) -> None:
    broker = _broker(upstream[0], tmp_path)
    body = json.dumps(_BODY).encode()
    try:
        many = b"".join(b"x-stainless-h%d: v\r\n" % i for i in range(5000))
        huge = b"x-stainless-big: " + b"v" * 200_000 + b"\r\n"
        for extra in (many, huge):
            head = b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n" + extra
            reply = _raw(broker, head + b"content-length: %d\r\n\r\n" % len(body), body)
            assert reply.split(b" ")[1] in (b"400", b"431"), reply[:80]
        # the session still gets its calls through
        ok = post_as_relay(broker, "/v1/messages", body, {"x-api-key": "p"})
        assert ok.status_code == 200
    finally:
        broker.stop()
    assert len(upstream[1]) == 1


def test_a_body_field_given_twice_is_refused() -> None:
    # outside review: the broker reads the last of duplicated keys, but protobuf's JSON
    # mapping (Google's front ends) appends a repeated field given twice and merges a message
    # given twice, and a first-key parser reads the first: what was checked and reserved
    # would not be what runs (8 candidates, Google Search for a sandbox with no network)
    for raw in (
        b'{"model":"claude-sonnet-4-6","model":"claude-opus-4-1","max_tokens":5}',
        b'{"model":"gpt-5","max_tokens":100000,"max_tokens":1,"n":128,"n":1}',
        b'{"model":"gpt-5","tools":[{"type":"web_search","type":"function"}]}',
        b'{"model":"claude-sonnet-4-6","max_tokens":5,"tools":[{"type":"web_search_20250305"}],'
        b'"tools":[]}',
    ):
        with pytest.raises(Refused, match="given twice"):
            read_head(raw)
    for raw in (
        b'{"contents":[],"tools":[{"googleSearch":{}}],"tools":[{"functionDeclarations":[]}]}',
        b'{"contents":[],"generationConfig":{"candidateCount":8},"generationConfig":{}}',
        b'{"contents":[],"cachedContent":"cachedContents/x","cachedContent":null}',
    ):
        with pytest.raises(Refused, match="given twice"):
            read_gemini_head(raw, "gemini-2.5-flash")
    # a body Python's parser cannot read but the typed decode can (a 5,000-digit number, a
    # byte that is not UTF-8) hid a duplicate behind it (second review): refused
    for raw in (
        b'{"model":"gpt-5","max_tokens":5,"x":' + b"9" * 5000 + b',"n":8,"n":1}',
        b'{"model":"gpt-5","max_tokens":5,"x":"\xff","n":8,"n":1}',
    ):
        with pytest.raises(Refused, match="not JSON every parser reads the same way"):
            read_head(raw)
    # a key repeated in different objects is no duplicate
    read_head(b'{"model":"gpt-5","max_tokens":5,"messages":[{"role":"user"},{"role":"user"}]}')


def test_a_predicted_output_is_refused() -> None:
    # its rejected tokens are billed at the output rate; the bytes reserve the input rate
    with pytest.raises(Refused, match="prediction"):
        read_head(b'{"model":"gpt-4.1","max_tokens":5,"prediction":{"type":"content"}}')


# --- BR8: connections that hold a thread ---------------------------------------------------


class _Endless(BaseHTTPRequestHandler):
    """A provider that streams for as long as the client reads (it never ends on its own)."""

    protocol_version = "HTTP/1.1"
    wrote: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        event = b'event: content_block_delta\ndata: {"delta": "' + b"x" * 65000 + b'"}\n\n'
        n = 0
        try:
            for _ in range(2000):  # at most 130 MB: past every socket buffer
                self.wfile.write(event)
                n += 1
        except OSError:
            pass
        self.wrote.append(n)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_stream_the_client_never_reads_frees_its_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker_mod, "READ_DEADLINE", 0.5)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    broker = _broker(f"http://127.0.0.1:{server.server_port}", tmp_path, budget=10.0)
    body = json.dumps({**_BODY, "stream": True}).encode()
    try:
        s = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(
            broker.preamble + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: %s\r\n"
            b"content-length: %d\r\n\r\n%s" % (broker.client_key.encode(), len(body), body)
        )
        s.recv(10)  # the answer started; then the client reads nothing more
        end = time.monotonic() + 20
        while broker._forwarding and time.monotonic() < end:
            time.sleep(0.1)
        assert broker._forwarding == 0  # the call was given up, not held open
        assert _Endless.wrote and _Endless.wrote[-1] < 2000  # the provider was hung up on
        assert broker.ledger.spent > 0  # billed (its reservation: no final usage arrived)
        s.close()
    finally:
        broker.stop()
        server.shutdown()
        server.server_close()


def test_idle_connections_to_the_driver_relay_are_capped_and_cut(
    upstream,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the relay listens where workers reach the driver: anyone who reaches that address can
    # open connections; each must not keep a thread of the driver forever
    monkeypatch.setattr(relay_mod, "READ_DEADLINE", 0.5, raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream[0])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-driver-key")
    r = DriverRelay(models=allowed_models("anthropic/claude-sonnet-4-6"), budget=1.0).start()
    before = threading.active_count()
    idle = []
    try:
        for _ in range(200):
            idle.append(socket.create_connection(("127.0.0.1", r.port), timeout=30))
        time.sleep(0.3)
        assert threading.active_count() - before <= getattr(relay_mod, "MAX_CONNECTIONS", 32) + 2
        ok = httpx.post(
            f"http://127.0.0.1:{r.port}/anthropic/v1/messages",
            json=_BODY,
            headers={"x-api-key": r.token},
            timeout=30,
        )
        assert ok.status_code == 200  # a worker's call still gets through the flood
        # a connection that never speaks is closed at the read deadline
        with socket.create_connection(("127.0.0.1", r.port), timeout=30) as s:
            started = time.monotonic()
            assert s.recv(64) == b""
            assert time.monotonic() - started < 10
    finally:
        for s in idle:
            s.close()
        r.stop()


def test_idle_connections_to_the_egress_proxy_are_capped_and_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the agent opens connections to the proxy's relay port and says nothing: each one was a
    # host thread with no deadline, as many as the agent liked
    monkeypatch.setattr(egress_mod, "READ_DEADLINE", 0.5, raising=False)
    proxy = EgressProxy(["example.com"], tmp_path / "net.jsonl", "agent").start()
    before = threading.active_count()
    idle = []
    try:
        for _ in range(300):
            idle.append(socket.create_connection(("127.0.0.1", proxy.port), timeout=30))
        time.sleep(0.3)
        assert threading.active_count() - before <= getattr(egress_mod, "MAX_CONNECTIONS", 64) + 2
        # a request still gets its answer (a refusal: the name is not resolvable here)
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as s:
            s.sendall(b"GET http://not-allowed.example/ HTTP/1.1\r\nhost: x\r\n\r\n")
            assert s.recv(64).startswith(b"HTTP/1.1 403")
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as s:
            started = time.monotonic()
            s.recv(64)  # closed at the deadline (our own timeout is 30 s)
            assert time.monotonic() - started < 10
    finally:
        for s in idle:
            s.close()
        proxy.stop()


# --- BR3: server tools the lists missed ------------------------------------------------------

_MISSED_ANTHROPIC = [
    {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
    {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    {"type": "tool_search_tool_regex", "name": "t"},  # the undated alias
]
_MISSED_OPENAI = [
    # hosted shell: OpenAI provisions a container and runs the model's commands in it
    {"type": "shell", "environment": {"type": "container_auto"}},
    {"type": "shell", "environment": {"type": "container_reference", "container_id": "cntr_1"}},
    # hosted tool search (server-executed unless `execution: client`)
    {"type": "tool_search"},
]


@pytest.mark.parametrize("tool", _MISSED_ANTHROPIC, ids=lambda t: t["type"])
def test_anthropic_tool_search_is_refused(
    upstream,  # noqa: F811
    tmp_path: Path,
    tool: dict[str, Any],
) -> None:
    broker = _broker(upstream[0], tmp_path)
    try:
        body = {**_BODY, "tools": [{"name": "Bash", "input_schema": {}}, tool]}
        resp = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
        assert resp.status_code == 400 and b"server tool" in resp.content
    finally:
        broker.stop()
    assert upstream[1] == []


@pytest.mark.parametrize("tool", _MISSED_OPENAI, ids=lambda t: json.dumps(t))
def test_openai_hosted_shell_and_tool_search_are_refused(
    upstream,  # noqa: F811
    tmp_path: Path,
    tool: dict[str, Any],
) -> None:
    broker = _broker(upstream[0], tmp_path, model="openai/gpt-5", wire="openai")
    try:
        body = {"model": "gpt-5", "input": "hi", "tools": [{"type": "function", "name": "f"}, tool]}
        resp = post_as_relay(
            broker, "/v1/responses", json.dumps(body).encode(), {"authorization": "x"}
        )
        assert resp.status_code == 400 and b"server tool" in resp.content
    finally:
        broker.stop()
    assert upstream[1] == []


def test_a_local_shell_tool_still_passes(upstream, tmp_path: Path) -> None:  # noqa: F811
    broker = _broker(upstream[0], tmp_path, model="openai/gpt-5", wire="openai")
    try:
        for tool in ({"type": "shell"}, {"type": "shell", "environment": {"type": "local"}}):
            body = {"model": "gpt-5", "input": "hi", "tools": [tool]}
            resp = post_as_relay(
                broker, "/v1/responses", json.dumps(body).encode(), {"authorization": "x"}
            )
            assert resp.status_code == 200
    finally:
        broker.stop()
    assert len(upstream[1]) == 2


def test_us_only_inference_is_refused(upstream, tmp_path: Path) -> None:  # noqa: F811
    # Anthropic bills `inference_geo: "us"` at 1.1x every token (Claude 4.6 and later); the
    # usage it returns counts tokens: the broker would bill it at the standard price
    broker = _broker(upstream[0], tmp_path)
    try:
        for geo in ("us", "US", "eu"):
            body = json.dumps({**_BODY, "inference_geo": geo}).encode()
            resp = post_as_relay(broker, "/v1/messages", body, {"x-api-key": "p"})
            assert resp.status_code == 400 and b"inference_geo" in resp.content
        ok = json.dumps({**_BODY, "inference_geo": "global"}).encode()
        assert post_as_relay(broker, "/v1/messages", ok, {"x-api-key": "p"}).status_code == 200
    finally:
        broker.stop()
    assert len(upstream[1]) == 1


# --- BR2: media whose tokens its bytes do not bound ------------------------------------------

# 1x1-pixel PNG; the provider bills an image by its pixel size (up to ~1,600 tokens for a
# 1568-pixel edge), and a large flat image compresses to a few hundred bytes
_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
_IMAGE_TOKENS = 1_600  # what the provider counts for each (a flat 1568x1568 image)


class _Vision(BaseHTTPRequestHandler):
    """Counts what Anthropic would bill: the text's bytes, 1,600 tokens an image, and the
    system prompt of 346 tokens it adds to a request that carries tools."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        blocks = [b for m in body["messages"] for b in m["content"] if isinstance(b, dict)]
        images = sum(1 for b in blocks if b.get("type") == "image")
        prompt = 346 if body.get("tools") else 0
        usage = {"input_tokens": 10 + images * _IMAGE_TOKENS + prompt, "output_tokens": 1}
        reply = json.loads(_REPLY)
        reply["usage"] = usage
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_images_cannot_spend_past_the_budget_their_bytes_reserve(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Vision)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _PNG}}
    body = {**_BODY, "max_tokens": 1, "messages": [{"role": "user", "content": [image] * 100}]}
    raw = json.dumps(body).encode()
    # a budget the body's bytes fit in many times over, and 100 images do not
    budget = 0.2
    broker = _broker(f"http://127.0.0.1:{server.server_port}", tmp_path, budget=budget)
    try:
        for _ in range(3):
            post_as_relay(broker, "/v1/messages", raw, {"x-api-key": "p"})
    finally:
        broker.stop()
        server.shutdown()
        server.server_close()
    assert broker.ledger.spent <= budget + 1e-9, broker.ledger.spent


def test_a_request_with_tools_reserves_the_system_prompt_the_provider_adds(
    serve,  # noqa: F811
    tmp_path: Path,
) -> None:
    url = serve(_Vision)
    tool = {"name": "t", "input_schema": {"type": "object"}}
    raw = json.dumps({**_BODY, "max_tokens": 1, "tools": [tool]}).encode()
    # a budget the body's bytes fit in, and the 346 tokens Anthropic adds for tools do not;
    # then one they fit in too
    bytes_only = worst_case_usd("anthropic/claude-sonnet-4-6", len(raw), 1)
    with_prompt = worst_case_usd("anthropic/claude-sonnet-4-6", len(raw) + 346, 1)
    assert bytes_only is not None and with_prompt is not None
    for budget, status in ((bytes_only * 1.05, 400), (with_prompt, 200)):
        broker = _broker(url, tmp_path, str(status), budget=budget)
        try:
            answered = post_as_relay(broker, "/v1/messages", raw, {"x-api-key": "p"})
        finally:
            broker.stop()
        assert broker.ledger.spent <= budget + 1e-12, (budget, broker.ledger.spent)
        # refused for what it could cost, or answered within the budget
        assert answered.status_code == status


# --- R1/R2: the driver's relay and a worker's files -------------------------------------------


def test_the_relay_forwards_only_the_wires_headers(upstream, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream[0])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-driver-key")
    r = DriverRelay(models=allowed_models("anthropic/claude-sonnet-4-6"), budget=1.0).start()
    try:
        resp = httpx.post(
            f"http://127.0.0.1:{r.port}/anthropic/v1/messages",
            json=_BODY,
            headers={
                "x-api-key": r.token,
                "OpenAI-Organization": "org-attacker",
                "X-Forwarded-For": "203.0.113.9",
                "Upgrade": "h2c",
                "anthropic-version": "2023-06-01",
            },
            timeout=30,
        )
        assert resp.status_code == 200
        (got,) = upstream[1]
        assert got["x-api-key"] == "sk-real-driver-key"
        assert not {"openai-organization", "x-forwarded-for", "upgrade"} & set(got)
        # and a GET with the token reaches nothing
        get = httpx.get(
            f"http://127.0.0.1:{r.port}/anthropic/v1/messages",
            headers={"x-api-key": r.token},
            timeout=30,
        )
        assert get.status_code == 405 and len(upstream[1]) == 1
    finally:
        r.stop()


KEY = "c1.candidate.0"


@pytest.mark.parametrize(
    "rel",
    [
        "/etc/skillbench-pwned",
        "transcripts//c1.candidate.0.jsonl",
        "transcripts/./c1.candidate.0.jsonl",
        "workspaces/c1.candidate.0/../c2.baseline.0/answer.txt",
        "workspaces/c1.candidate.0",
        "transcripts/c1.candidate.0.attempt1.jsonl/../../summary.json",
        "transcripts/C1.CANDIDATE.0.jsonl",
        "transcripts/c1.candidate.0.jsonl\n",
        "transcripts/c1xcandidate.0.jsonl",  # the key's dots are not wildcards
    ],
)
def test_more_names_a_worker_may_not_write(tmp_path: Path, rel: str) -> None:
    with pytest.raises(ClusterError, match="not this session's"):
        _write(tmp_path, rel, b"forged", True, None, KEY)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_a_workers_file_is_not_written_through_a_link_in_the_run_folder(tmp_path: Path) -> None:
    # a link already in the session's workspace folder (a copy-out that kept the agent's
    # links, a resumed run's): the worker's file of that name must not land where it points
    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "run"
    (run / "workspaces" / KEY).mkdir(parents=True)
    (run / "workspaces" / KEY / "ln").symlink_to(outside / "victim")
    (run / "workspaces" / KEY / "dir").symlink_to(outside)
    for rel in (f"workspaces/{KEY}/ln", f"workspaces/{KEY}/dir/victim2"):
        with pytest.raises(ClusterError, match="through a link"):
            _write(run, rel, b"forged", True, None, KEY)
    assert list(outside.iterdir()) == []


_DATA_URL = f"data:image/png;base64,{_PNG}"


@pytest.mark.parametrize(
    "body",
    [
        # Chat Completions and Responses images, a Responses PDF, Chat audio
        {
            "model": "gpt-5",
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": _DATA_URL}}],
                }
            ],
        },
        {
            "model": "gpt-5",
            "input": [
                {"role": "user", "content": [{"type": "input_image", "image_url": _DATA_URL}]}
            ],
        },
        {
            "model": "gpt-5",
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_file", "filename": "a.pdf", "file_data": "JVBERi0="}
                    ],
                }
            ],
        },
        {
            "model": "gpt-5",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}
                    ],
                }
            ],
        },
        # an Anthropic PDF, and an image in a tool result
        {
            "model": "c",
            "max_tokens": 1,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "document",
                            "source": {
                                "type": "base64",
                                "media_type": "application/pdf",
                                "data": "JVBERi0=",
                            },
                        }
                    ],
                }
            ],
        },
        {
            "model": "c",
            "max_tokens": 1,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t",
                            "content": [
                                {
                                    "type": "image",
                                    "source": {
                                        "type": "base64",
                                        "media_type": "image/png",
                                        "data": _PNG,
                                    },
                                }
                            ],
                        }
                    ],
                }
            ],
        },
    ],
    ids=["chat-image", "responses-image", "responses-pdf", "chat-audio", "pdf", "tool-image"],
)
def test_media_is_reserved_beyond_its_bytes_on_every_wire(body: dict[str, Any]) -> None:
    # (and a body cannot set the allowance itself)
    head = read_head(json.dumps({**body, "unseen_tokens": -(10**9)}).encode())
    # gpt-4o-mini bills a 768x2048 high-detail image 2,833 + 8 x 5,667 tokens
    assert head.unseen_tokens >= 48_169


def test_gemini_inline_data_is_reserved_beyond_its_bytes() -> None:

    part = {"inlineData": {"mimeType": "application/pdf", "data": "AAAA"}}
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}, part]}]}
    assert read_gemini_head(json.dumps(body).encode(), "gemini-2.5-pro").unseen_tokens >= 10**6
    text = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert read_gemini_head(json.dumps(text).encode(), "gemini-2.5-pro").unseen_tokens == 0
    assert read_head(json.dumps(_BODY).encode()).unseen_tokens == 0  # text is its bytes


def test_the_relay_reserves_images_beyond_their_bytes(monkeypatch) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Vision)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-driver-key")
    budget = 0.2
    r = DriverRelay(models=allowed_models("anthropic/claude-sonnet-4-6"), budget=budget).start()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _PNG}}
    body = {**_BODY, "max_tokens": 1, "messages": [{"role": "user", "content": [image] * 100}]}
    try:
        for _ in range(3):
            httpx.post(
                f"http://127.0.0.1:{r.port}/anthropic/v1/messages",
                json=body,
                headers={"x-api-key": r.token},
                timeout=30,
            )
    finally:
        r.stop()
        server.shutdown()
        server.server_close()
    assert r.ledger.spent <= budget + 1e-9, r.ledger.spent


def test_the_relay_token_reaches_only_the_run_models_own_provider(
    upstream,  # noqa: F811
    monkeypatch,
) -> None:
    # a run on Anthropic's model, with the driver holding an OpenAI and a Gemini key too (for
    # its judge): the token must not carry the run's model name to another provider's key
    monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream[0])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-driver-key")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{upstream[0]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-judge-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", upstream[0])
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-judge-key")
    r = DriverRelay(models=allowed_models("anthropic/claude-sonnet-4-6"), budget=1.0).start()
    base = f"http://127.0.0.1:{r.port}"
    try:
        chat = {"model": "claude-sonnet-4-6", "max_completion_tokens": 8, "messages": []}
        resp = httpx.post(
            f"{base}/openai/chat/completions",
            json=chat,
            headers={"authorization": f"Bearer {r.token}"},
            timeout=30,
        )
        assert resp.status_code == 400
        gem = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        resp = httpx.post(
            f"{base}/google/v1beta/models/claude-sonnet-4-6:generateContent",
            json=gem,
            headers={"x-goog-api-key": r.token},
            timeout=30,
        )
        assert resp.status_code == 400
        assert upstream[1] == []  # no other provider's key was sent anywhere
    finally:
        r.stop()


def _trickle(port: int, opening: bytes, every: float, limit: float) -> float:
    """Send `opening`, then one body byte every `every` s; how long until the server ends it."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(opening)
        s.setblocking(False)
        started = time.monotonic()
        while time.monotonic() - started < limit:
            try:
                if s.recv(64) is not None:
                    break
            except BlockingIOError:
                pass
            try:
                s.send(b"x")
            except OSError:
                break
            time.sleep(every)
        return time.monotonic() - started


def test_a_trickled_body_is_cut_at_the_read_deadline(
    upstream,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # one byte every 0.2 s never trips a 0.5 s deadline between reads: the deadline is the
    # whole body's, or 32 such connections keep the session's own calls out for good
    monkeypatch.setattr(broker_mod, "READ_DEADLINE", 0.5)
    broker = _broker(upstream[0], tmp_path)
    try:
        head = (
            broker.preamble + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: %s\r\n"
            b"content-length: 500\r\n\r\n" % broker.client_key.encode()
        )
        assert _trickle(broker.port, head, 0.2, limit=15) < 5
    finally:
        broker.stop()
    assert upstream[1] == [] and broker.unkeyed == 0  # cut by the deadline, not for its key


def test_a_trickled_body_to_the_relay_is_cut_at_the_read_deadline(
    upstream,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(relay_mod, "READ_DEADLINE", 0.5)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream[0])
    r = DriverRelay(models=allowed_models("anthropic/claude-sonnet-4-6"), budget=1.0).start()
    try:
        head = (
            b"POST /anthropic/v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: "
            + r.token.encode()
            + b"\r\ncontent-length: 500\r\n\r\n"
        )
        assert _trickle(r.port, head, 0.2, limit=15) < 5
    finally:
        r.stop()
    assert upstream[1] == []


@pytest.mark.parametrize(
    "extra",
    [
        {"context_management": {"edits": [{"type": "compact_20260112"}]}},
        {
            "context_management": {
                "edits": [
                    {"type": "clear_tool_uses_20250919"},
                    {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 1}},
                ]
            }
        },
        {"compaction": {"type": "summarize"}},
    ],
    ids=["compact", "compact-after-clear", "compaction-param"],
)
def test_server_side_compaction_is_refused(upstream, tmp_path: Path, extra: dict) -> None:  # noqa: F811
    # compaction is a second sampling pass over the whole conversation, billed, and reported
    # only in `usage.iterations`: the top-level usage the broker bills leaves it out
    broker = _broker(upstream[0], tmp_path)
    try:
        body = json.dumps({**_BODY, **extra}).encode()
        resp = post_as_relay(broker, "/v1/messages", body, {"x-api-key": "p"})
        assert resp.status_code == 400 and b"compaction" in resp.content
        # clearing old tool results (Claude Code's own context editing) still passes
        clear = {"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}
        ok = json.dumps({**_BODY, **clear}).encode()
        assert post_as_relay(broker, "/v1/messages", ok, {"x-api-key": "p"}).status_code == 200
    finally:
        broker.stop()
    assert len(upstream[1]) == 1


def test_compaction_in_a_list_of_entries_is_refused_too() -> None:
    from skillbench.broker.limits import Refused

    for management in ([{"type": "compaction", "compact_threshold": 1000}], {"edits": "x"}):
        body = {"model": "gpt-5", "input": "hi", "context_management": management}
        if isinstance(management, list):
            with pytest.raises(Refused, match="compaction"):
                read_head(json.dumps(body).encode())
        else:
            read_head(json.dumps(body).encode())  # a shape it cannot compact with passes


def test_another_users_flood_cannot_evict_the_sessions_own_connection(
    upstream,  # noqa: F811
    tmp_path: Path,
) -> None:
    # the relay opens with the secret, then the agent's request follows as it crosses the
    # executor's channel; another local user flooding the port in between must not get that
    # connection closed as "the longest idle" (only connections without the secret may be)
    broker = _broker(upstream[0], tmp_path)
    body = json.dumps(_BODY).encode()
    flood: list[socket.socket] = []
    try:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
            s.sendall(broker.preamble)
            time.sleep(0.3)  # admitted
            for _ in range(100):
                flood.append(socket.create_connection(("127.0.0.1", broker.port), timeout=30))
            time.sleep(0.3)
            s.sendall(
                b"POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: %s\r\n"
                b"content-length: %d\r\n\r\n%s" % (broker.client_key.encode(), len(body), body)
            )
            assert s.recv(64).startswith(b"HTTP/1.1 200")
    finally:
        for f in flood:
            f.close()
        broker.stop()


def test_a_sidecars_connections_through_the_relay_cannot_keep_the_sessions_calls_out(
    upstream,  # noqa: F811
    tmp_path: Path,
) -> None:
    # a pod's sidecar reaches the relay port, so its connections arrive with the preamble:
    # as many as the broker serves, each holding a request it never finishes, must not be
    # the ones kept when the session's own call comes (the call's key proves it; theirs
    # never arrives)
    broker = _broker(upstream[0], tmp_path)
    body = json.dumps(_BODY).encode()
    held: list[socket.socket] = []
    try:
        for _ in range(broker_mod.MAX_CONNECTIONS + 8):
            s = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
            s.sendall(broker.preamble + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n")
            held.append(s)
        time.sleep(0.5)  # every one admitted and waiting on its headers
        for _ in range(3):
            ok = post_as_relay(broker, "/v1/messages", body, {})
            assert ok.status_code == 200, ok
    finally:
        for s in held:
            s.close()
        broker.stop()


# --- second outside review of the broker (issue 38): input its bytes do not bound ------------


@pytest.mark.parametrize(
    "tool, least",
    [
        ({"type": "bash_20250124", "name": "bash"}, 346 + 245),
        ({"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}, 346 + 700),
        (
            {"type": "computer_20250124", "name": "computer", "display_width_px": 1024},
            346 + 735 + 499,
        ),
        ({"name": "own", "input_schema": {"type": "object"}}, 346),
    ],
    ids=["bash", "text-editor", "computer", "own-tool"],
)
def test_a_tool_the_provider_defines_is_reserved_beyond_its_bytes(
    tool: dict[str, Any], least: int
) -> None:
    # Anthropic expands a tool it defines into a definition of its own, billed as input
    head = read_head(json.dumps({**_BODY, "tools": [tool]}).encode())
    assert head.unseen_tokens >= least
    if "type" not in tool:  # a tool the request defines is its bytes, and the tool prompt
        assert head.unseen_tokens < 1_000


def test_a_stored_item_is_not_read_by_reference() -> None:
    # Responses stores each response by default and shows its items' ids: an item_reference
    # reads one (another session's too) as input that is not in the body
    body = {
        "model": "gpt-5",
        "max_output_tokens": 8,
        "input": [{"type": "item_reference", "id": "msg_0123"}, {"role": "user", "content": "x"}],
    }
    with pytest.raises(broker_mod.Refused, match="item_reference"):
        read_head(json.dumps(body).encode())


@pytest.mark.parametrize("mime", ["audio/mp3", "video/mp4", "AUDIO/wav"])
def test_gemini_audio_is_refused_as_billed_above_its_counted_rate(mime: str) -> None:

    part = {"inlineData": {"mimeType": mime, "data": "AAAA"}}
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}, part]}]}
    with pytest.raises(broker_mod.Refused, match="bills audio"):
        read_gemini_head(json.dumps(body).encode(), "gemini-2.5-flash")
    image = {"inlineData": {"mimeType": "image/png", "data": _PNG}}
    image_body = {"contents": [{"role": "user", "parts": [image]}]}
    assert read_gemini_head(json.dumps(image_body).encode(), "gemini-2.5-flash").unseen_tokens > 0


def test_gemini_3_pro_bills_its_long_context_rates() -> None:
    from skillbench.models.base import Usage
    from skillbench.models.pricing import cost_usd

    # $4 / $18 per Mtok for all of a call's tokens past 200k input ($2 / $12 under)
    long = cost_usd("google/gemini-3-pro", Usage(input_tokens=300_000, output_tokens=10_000))
    short = cost_usd("google/gemini-3-pro", Usage(input_tokens=100_000, output_tokens=10_000))
    assert long == pytest.approx(300_000 * 4e-6 + 10_000 * 18e-6)
    assert short == pytest.approx(100_000 * 2e-6 + 10_000 * 12e-6)


class _TooLong(BaseHTTPRequestHandler):
    """A provider that refuses, unbilled and after a second, a body past its context window,
    and answers the rest."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if len(body) > 100_000:
            time.sleep(1.0)
            data = b'{"type":"error","error":{"type":"invalid_request_error","message":"long"}}'
            self.send_response(400)
        else:
            data = _REPLY
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_calls_the_provider_refuses_cannot_hold_the_budget_from_the_clis_call(
    serve,  # noqa: F811
    tmp_path: Path,
) -> None:
    # the agent holds its session's key: a body too long for the context reserves every byte
    # while in flight and is refused unbilled; timed for its CLI's next call, that call was
    # refused for budget (the session "not run", the run stopped) though nothing was spent
    from skillbench.models.ledger import RunLedger

    run = RunLedger(5.0)
    broker = _broker(serve(_TooLong), tmp_path, budget=5.0, run_ledger=run)
    hold = json.dumps(
        {**_BODY, "max_tokens": 1, "messages": [{"role": "user", "content": "x" * 800_000}]}
    )
    held: list[int] = []
    agent = threading.Thread(
        target=lambda: held.append(
            post_as_relay(broker, "/v1/messages", hold.encode(), {"x-api-key": "p"}).status_code
        )
    )
    try:
        agent.start()
        time.sleep(0.3)  # the agent's call is in flight, holding $4.80 of the $5
        own = {**_BODY, "max_tokens": 32_000}
        answered = post_as_relay(
            broker, "/v1/messages", json.dumps(own).encode(), {"x-api-key": "p"}
        )
        agent.join()
    finally:
        broker.stop()
    assert held == [400]
    assert answered.status_code == 200 and not broker.exhausted
    assert run.snapshot().refused == 0 and run.snapshot().spent <= 5.0
