"""BC2 (BROKEN, high on the openai wire): a Responses call with `background: true` is billed $0.

OpenAI's background mode (developers.openai.com/docs/guides/background) answers POST
/v1/responses at once with `status: "queued"`, `output: []` and no usage; the model then runs
at the provider, billed to the key, and its output is fetched later (GET /v1/responses/{id},
or chained into the next call with `previous_response_id`). The broker forwards the request
(read_head reads only model, caps, n, tools), finds no usage in the queued body and settles
the call at $0, releasing its reservation. Any process in a Codex sandbox can start such
calls through the relay, each up to max_output_tokens, with nothing counted against --max-cost.

Here: an upstream answering as OpenAI does for background mode. Expected: refused (400,
never forwarded) or charged its reservation. Observed: 200, broker.ledger.spent == 0.0.
Fix: refuse `background: true` in read_head (no CLI the broker serves uses it), and settle any
2xx call whose usage is missing at its reservation.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from skillbench.broker import Broker
from tests.test_broker_attacks import post_as_relay


class _Background(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    started: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.started.append(int(body.get("max_output_tokens") or 0))  # generation queued
        reply = json.dumps(
            {
                "id": "resp_1",
                "object": "response",
                "status": "queued",
                "background": True,
                "model": "gpt-5",
                "output": [],
                "usage": None,
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_background_response_is_refused_or_charged(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Background)
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
            "background": True,
            "store": True,
            "max_output_tokens": 100_000,
            "input": "write a very long novel",
        }
        reply = post_as_relay(
            broker, "/v1/responses", json.dumps(body).encode(), {"authorization": "p"}
        )
        refused = reply.status_code == 400 and _Background.started == []
        # 100k output tokens at $10/Mtok: the reservation was $1 or more
        assert refused or broker.ledger.spent >= 1.0, (reply.status_code, broker.ledger.spent)
    finally:
        broker.stop()
        server.shutdown()
        server.server_close()
