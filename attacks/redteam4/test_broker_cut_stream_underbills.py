"""BB1 (BROKEN, high): a sandbox that hangs up on a stream before its last event is billed
one output token, whatever the provider generated.

Anthropic's stream carries input tokens and `output_tokens: 1` in `message_start`; the real
output count arrives only in `message_delta`, just before `message_stop`. broker._stream stops
reading upstream as soon as a write to the sandbox fails (the CLI "went away"), and _settle
bills the usage read from what was seen. A sandbox reads the text it wants, then closes the
socket before `message_delta`: the provider bills every generated token, the session's ledger
(and the run's --max-cost) counts one. Repeat: unbounded spend under any --max-cost.

Here: an upstream that generates 100 output tokens every 50 ms (counting what it generated,
which is what a provider bills when the client goes away), then message_delta. The
relay-side client reads 10 deltas and closes. Expected: the call settles at >= the tokens the
provider generated before the broker hung up on it (or at its reservation, the worst case,
when the usage is unknown). Observed: output_tokens = 1 (generated ~800).
Fix: on a cut stream (wire.cut(call.text)) settle at the reservation, or keep draining
upstream to the end after the sandbox hangs up (bounded by max_tokens) to read the usage.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from skillbench.broker import Broker

OUTPUT_TOKENS = 4000
GENERATED: list[int] = []


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


class _Streamer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        start = {
            "type": "message",
            "id": "m",
            "role": "assistant",
            "content": [],
            "model": "claude-sonnet-4-6",
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        self.wfile.write(_event("message_start", {"type": "message_start", "message": start}))
        self.wfile.write(
            _event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        try:
            for _ in range(OUTPUT_TOKENS // 100):  # a provider generating: 100 tokens a beat
                delta = {"type": "text_delta", "text": "word " * 100}
                self.wfile.write(
                    _event(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": delta},
                    )
                )
                self.wfile.flush()
                GENERATED.append(100)  # what the provider bills: tokens it generated
                time.sleep(0.05)
            self.wfile.write(
                _event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn"},
                        "usage": {"output_tokens": OUTPUT_TOKENS},
                    },
                )
            )
            self.wfile.write(_event("message_stop", {"type": "message_stop"}))
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_hanging_up_before_message_delta_is_billed_one_token(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Streamer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    broker = Broker(
        upstream=f"http://127.0.0.1:{server.server_port}",
        api_key="sk-real",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
        budget=1.0,
    ).start()
    try:
        body = json.dumps(
            {
                "model": "claude-sonnet-4-6",
                "max_tokens": 8000,
                "stream": True,
                "messages": [{"role": "user", "content": "write"}],
            }
        ).encode()
        s = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
        s.sendall(
            broker.preamble + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n"
            b"content-type: application/json\r\nx-api-key: p\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        seen = b""
        while seen.count(b"content_block_delta") < 10:
            seen += s.recv(65536)
        s.close()  # the sandbox has its text; it hangs up before the usage
        deadline = time.monotonic() + 10
        while broker.ledger.reserved > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2.0)
        generated = sum(GENERATED)  # the provider stopped when the broker hung up on it
        assert generated >= 500
        assert broker.usage.output_tokens >= generated, (generated, broker.usage)
    finally:
        broker.stop()
        server.shutdown()
        server.server_close()
