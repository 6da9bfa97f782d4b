"""BC1 (BROKEN, high on the openai wire): a streamed Chat Completions call is billed $0.

The openai wire forwards `/v1/chat/completions`. OpenAI streams a Chat Completion's usage only
when the request sets `stream_options: {"include_usage": true}` ("an additional chunk will be
streamed before the data: [DONE] message", OpenAI OpenAPI spec ChatCompletionStreamOptions);
without it no chunk carries `usage`. The broker
neither sets that option nor refuses its absence, and _openai_usage finds nothing, so the call
settles at Usage() = $0 and its reservation is released. Any process in a Codex sandbox can
POST such calls to the relay: unlimited output tokens under any --max-cost.

Here: an upstream that streams a chat completion exactly as OpenAI does without include_usage
(content chunks, a finish chunk, [DONE]) for 4000 generated tokens. Expected: the session is
charged for the call (at least the tokens generated, or its reservation when usage is
missing). Observed: broker.ledger.spent == 0.0, broker.usage all zero.
Fix: set stream_options.include_usage = true on streamed chat calls before forwarding (the
body is re-serialised anyway for nothing else, so alternatively refuse a streamed chat call
without it), and settle a call whose usage is missing at its reservation.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from skillbench.broker import Broker
from tests.test_broker_attacks import post_as_relay


class _OpenAIChatStream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        with_usage = (body.get("stream_options") or {}).get("include_usage") is True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        base = {"id": "c", "object": "chat.completion.chunk", "model": "gpt-5"}
        for _ in range(40):  # 4000 tokens of text, 100 a chunk
            delta = {"index": 0, "delta": {"content": "word " * 100}, "finish_reason": None}
            self.wfile.write(f"data: {json.dumps({**base, 'choices': [delta]})}\n\n".encode())
        end = {"index": 0, "delta": {}, "finish_reason": "stop"}
        self.wfile.write(f"data: {json.dumps({**base, 'choices': [end]})}\n\n".encode())
        if with_usage:
            usage = {"prompt_tokens": 10, "completion_tokens": 4000, "total_tokens": 4010}
            chunk = {**base, "choices": [], "usage": usage}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_streamed_chat_completion_is_charged(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAIChatStream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    broker = Broker(
        upstream=f"http://127.0.0.1:{server.server_port}/v1",
        api_key="sk-real",
        model="openai/gpt-5",
        wire="openai",
        exchanges=tmp_path / "x.jsonl",
        budget=5.0,
    ).start()
    try:
        body = {
            "model": "gpt-5",
            "stream": True,
            "max_completion_tokens": 4000,
            "messages": [{"role": "user", "content": "write"}],
        }
        reply = post_as_relay(
            broker, "/v1/chat/completions", json.dumps(body).encode(), {"authorization": "p"}
        )
        assert reply.status_code == 200 and b"[DONE]" in reply.content
        # gpt-5: $10 per Mtok output -> 4000 tokens are $0.04
        assert broker.ledger.spent >= 0.04, (broker.ledger.spent, broker.usage)
    finally:
        broker.stop()
        server.shutdown()
        server.server_close()
