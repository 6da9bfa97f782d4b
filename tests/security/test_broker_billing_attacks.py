"""What the broker bills for a call a sandbox shapes to be counted as less than it cost
(docs/trust.md): a streamed Chat Completion that asks for no usage, a Responses call that
generates in the background, a stream the sandbox hangs up on before its count, and (below)
long-context rates. Each upstream answers as the provider does and counts what it would bill."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from skillbench.broker.server import Broker
from skillbench.models.base import Usage
from skillbench.models.pricing import cost_usd, worst_case_usd
from tests.security.test_broker_attacks import post_as_relay


@pytest.fixture
def serve() -> Iterator[Any]:
    """serve(handler) -> its base URL; every server started is shut at the end."""
    servers: list[ThreadingHTTPServer] = []

    def start(handler: type[BaseHTTPRequestHandler]) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _openai_broker(url: str, tmp_path: Path) -> Broker:
    return Broker(
        upstream=f"{url}/v1",
        api_key="sk-real",
        model="openai/gpt-5",
        wire="openai",
        exchanges=tmp_path / "x.jsonl",
        budget=5.0,
    ).start()


# --- BC1: a streamed Chat Completion reports usage only when asked --------------------------


class _ChatStream(BaseHTTPRequestHandler):
    """Streams a chat completion as OpenAI does: content chunks, a finish chunk, then (only
    when `stream_options.include_usage` is set) a usage chunk with `choices: []`; `usage:
    null` on every chunk when it is set. `honours = False`: a provider that never counts."""

    protocol_version = "HTTP/1.1"
    asked: ClassVar[list[bool]] = []
    honours = True

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        with_usage = (body.get("stream_options") or {}).get("include_usage") is True
        self.asked.append(with_usage)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        base: dict[str, Any] = {"id": "c", "object": "chat.completion.chunk", "model": "gpt-5"}
        if with_usage:
            base["usage"] = None
        for _ in range(40):  # 4000 tokens of text, 100 a chunk
            delta = {"index": 0, "delta": {"content": "word " * 100}, "finish_reason": None}
            self.wfile.write(f"data: {json.dumps({**base, 'choices': [delta]})}\n\n".encode())
        end = {"index": 0, "delta": {}, "finish_reason": "stop"}
        self.wfile.write(f"data: {json.dumps({**base, 'choices': [end]})}\n\n".encode())
        if with_usage and self.honours:
            usage = {"prompt_tokens": 10, "completion_tokens": 4000, "total_tokens": 4010}
            chunk = {**base, "choices": [], "usage": usage}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _chunks(stream: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for line in stream.decode().split("\n")
        if line.startswith("data:") and line.strip() != "data: [DONE]"
    ]


def _chat(broker: Broker, **extra: Any) -> bytes:
    body = {
        "model": "gpt-5",
        "stream": True,
        "max_completion_tokens": 4000,
        "messages": [{"role": "user", "content": "write"}],
        **extra,
    }
    reply = post_as_relay(
        broker, "/v1/chat/completions", json.dumps(body).encode(), {"authorization": "p"}
    )
    assert reply.status_code == 200 and reply.content.endswith(b"data: [DONE]\n\n")
    return reply.content


def test_a_streamed_chat_completion_is_charged_its_usage(serve, tmp_path: Path) -> None:
    handler = type("H", (_ChatStream,), {"asked": []})
    broker = _openai_broker(serve(handler), tmp_path)
    try:
        seen = _chunks(_chat(broker))  # the client asks for no usage
        mine = _chunks(_chat(broker, stream_options={"include_usage": True}))
    finally:
        broker.stop()
    assert handler.asked == [True, True]  # the broker asked the provider on its behalf
    # a client that did not ask sees no usage chunk: every chunk has its choice
    assert len(seen) == 41 and all(len(c["choices"]) == 1 for c in seen)
    assert mine[-1]["choices"] == [] and mine[-1]["usage"]["completion_tokens"] == 4000
    one = cost_usd("openai/gpt-5", Usage(input_tokens=10, output_tokens=4000))
    assert one is not None and broker.ledger.spent == pytest.approx(2 * one)  # $0.04 each
    assert broker.usage.output_tokens == 8000


def test_a_chat_stream_that_never_reports_usage_is_charged_its_reservation(
    serve, tmp_path: Path
) -> None:
    handler = type("H", (_ChatStream,), {"asked": [], "honours": False})
    broker = _openai_broker(serve(handler), tmp_path)
    try:
        _chat(broker)
    finally:
        broker.stop()
    rows = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    # (the broker forwards the body as it logs it: with the stream option it added)
    worst = worst_case_usd("openai/gpt-5", len(json.dumps(rows[0]["request"])), 4000)
    assert worst is not None and broker.ledger.spent == pytest.approx(worst)
    assert rows[0]["cost_usd"] == broker.ledger.spent and "reservation" in rows[0]["billed"]


# --- BC2: Responses' background mode generates after the call is answered -----------------


class _Background(BaseHTTPRequestHandler):
    """Answers as OpenAI does for background mode: queued, no output, no usage (the model
    goes on generating at the provider's, billed to the key)."""

    protocol_version = "HTTP/1.1"
    started: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.started.append(int(body.get("max_output_tokens") or 0))
        reply = json.dumps(
            {"id": "resp_1", "object": "response", "status": "queued", "usage": None}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_background_response_is_refused(serve, tmp_path: Path) -> None:
    handler = type("H", (_Background,), {"started": []})
    broker = _openai_broker(serve(handler), tmp_path)
    try:
        body = {
            "model": "gpt-5",
            "background": True,
            "store": True,
            "max_output_tokens": 100_000,
            "input": "write a very long novel",
        }
        data = json.dumps(body).encode()
        reply = post_as_relay(broker, "/v1/responses", data, {"authorization": "p"})
        assert reply.status_code == 400 and b"background" in reply.content
        assert handler.started == []  # never forwarded
        # in the foreground, a body without usage (however it came to be) is its reservation
        body["background"] = False
        data = json.dumps(body).encode()
        assert post_as_relay(broker, "/v1/responses", data, {"authorization": "p"}).status_code
    finally:
        broker.stop()
    assert handler.started == [100_000]
    worst = worst_case_usd("openai/gpt-5", len(data), 100_000)
    assert worst is not None and worst >= 1.0 and broker.ledger.spent == pytest.approx(worst)


# --- BB1: a sandbox hangs up on a stream before its count -----------------------------------


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


class _Generating(BaseHTTPRequestHandler):
    """An Anthropic stream generating 100 tokens every 50 ms; `message_start` counts one
    output token, the real count comes in `message_delta`. `generated` is what the provider
    bills: what it generated before it was hung up on."""

    protocol_version = "HTTP/1.1"
    generated: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        start = {"id": "m", "role": "assistant", "content": [], "model": "claude-sonnet-4-6"}
        start["usage"] = {"input_tokens": 10, "output_tokens": 1}
        try:
            self.wfile.write(_event("message_start", {"message": start}))
            for _ in range(40):
                delta = {"index": 0, "delta": {"type": "text_delta", "text": "word " * 100}}
                self.wfile.write(_event("content_block_delta", delta))
                self.wfile.flush()
                self.generated.append(100)
                time.sleep(0.05)
            self.wfile.write(_event("message_delta", {"usage": {"output_tokens": 4000}}))
            self.wfile.write(_event("message_stop", {}))
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_hanging_up_before_the_count_is_billed_the_reservation(serve, tmp_path: Path) -> None:
    handler = type("H", (_Generating,), {"generated": []})
    broker = Broker(
        upstream=serve(handler),
        api_key="sk-real",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
        budget=1.0,
    ).start()
    body = json.dumps(
        {
            "model": "claude-sonnet-4-6",
            "max_tokens": 8000,
            "stream": True,
            "messages": [{"role": "user", "content": "write"}],
        }
    ).encode()
    try:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
            s.sendall(
                broker.preamble + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n"
                b"content-type: application/json\r\n"
                + f"x-api-key: {broker.client_key}\r\n".encode()
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            seen = b""
            while seen.count(b"event: content_block_delta") < 10:
                seen += s.recv(65536)
        # the sandbox has its text and hangs up before message_delta
        deadline = time.monotonic() + 10
        while broker.ledger.reserved > 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        broker.stop()
    time.sleep(0.5)  # (the provider notices the broker hung up on it too)
    generated = sum(handler.generated)
    # the broker stopped reading: the provider stopped short of the whole answer
    assert 1000 <= generated < 4000
    worst = worst_case_usd("anthropic/claude-sonnet-4-6", len(body), 8000)
    billed = cost_usd("anthropic/claude-sonnet-4-6", Usage(input_tokens=10, output_tokens=4000))
    assert worst is not None and billed is not None and worst > billed  # (what it could bill)
    assert broker.ledger.spent == pytest.approx(worst)
    (row,) = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert "reservation" in row["billed"] and row["cost_usd"] == pytest.approx(worst)


# --- BP1: long-context rates, which the sandbox turns on with `anthropic-beta` ----------------


class _LongContext(BaseHTTPRequestHandler):
    """Answers every call with the usage in `usages`, in turn (a 1M-context call's)."""

    protocol_version = "HTTP/1.1"
    usages: ClassVar[list[dict[str, int]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        usage = self.usages.pop(0)
        body = json.dumps(
            {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": usage}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_long_context_call_is_billed_at_its_rates(serve, tmp_path: Path) -> None:
    # over 200k input tokens (cache writes count), then just under it
    over = {"input_tokens": 800_000, "cache_creation_input_tokens": 100_000}
    under = {"input_tokens": 150_000, "cache_read_input_tokens": 49_999}
    handler = type(
        "H",
        (_LongContext,),
        {"usages": [{**over, "output_tokens": 10_000}, under | {"output_tokens": 10_000}]},
    )
    broker = Broker(
        upstream=serve(handler),
        api_key="sk-real",
        model="anthropic/claude-sonnet-4-5",
        exchanges=tmp_path / "x.jsonl",
        budget=50.0,
    ).start()
    try:
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 10_000,
            "messages": [{"role": "user", "content": "y " * 450_000}],
        }
        headers = {"x-api-key": "p", "anthropic-beta": "context-1m-2025-08-07"}
        for _ in range(2):
            reply = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), headers)
            assert reply.status_code == 200
    finally:
        broker.stop()
    costs = [json.loads(x)["cost_usd"] for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    # Anthropic's long-context rates on Sonnet 4.5: $6 input, $7.50 a 5-minute cache write,
    # $22.50 output per Mtok (base: $3, $3.75, $15)
    assert costs[0] == pytest.approx(0.8 * 6 + 0.1 * 7.5 + 0.01 * 22.5)  # $5.775, not $2.925
    assert costs[1] == pytest.approx(0.15 * 3 + 0.049999 * 0.3 + 0.01 * 15)
    # the reservation holds the dearer rates too: a 900 KB body may be 900k tokens, each an
    # hour's cache write at 2x the long-context input rate ($12)
    worst = worst_case_usd("anthropic/claude-sonnet-4-5", 900_000, 10_000)
    assert worst == pytest.approx(0.9 * 12 + 0.01 * 22.5)
    assert worst_case_usd("anthropic/claude-sonnet-4-6", 900_000, 10_000) == pytest.approx(
        0.9 * 6 + 0.01 * 15
    )  # (Sonnet 4.6 serves its 1M window at the base rates)
