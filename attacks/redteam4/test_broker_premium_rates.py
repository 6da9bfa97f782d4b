"""BP1 (BROKEN, low-medium): the broker bills every token at the base rate, but the sandbox
picks request features the provider bills at premium rates, so --max-cost under-counts.

The anthropic wire forwards `anthropic-beta` as the sandbox sends it. With
`context-1m-2025-08-07`, a Sonnet 4/4.5 call over 200k input tokens is billed at the long-
context rates ($6 input / $22.50 output per Mtok, 2x / 1.5x); `cache_control: {ttl: "1h"}` cache
writes are billed at 2x input ($6 on Sonnet), reported in usage.cache_creation.
ephemeral_1h_input_tokens. models/pricing.cost_usd knows one input, output, cache read and
cache write (5-minute, 1.25x) price per model, so both are settled at the base rates.

Here: an upstream answering a 1M-beta call with 900k input tokens, of which 100k were 1-hour
cache writes, and 10k output. Provider's bill (Anthropic's published rates): 800k x $6 + 100k
x $6 (1h write, long context... at least 2x base) + 10k x $22.5 = $5.63 at least. Expected:
the session's ledger spends >= $5.0. Observed: $2.925 (800k x 3 + 100k x 3.75 + 10k x 15).
Fix: price long-context tiers and 1h cache writes (usage.cache_creation), or refuse the
betas/ttl the price table does not cover (drop `anthropic-beta` values not on a list).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from skillbench.broker import Broker
from tests.test_broker_attacks import post_as_relay

USAGE = {
    "input_tokens": 800_000,
    "cache_creation_input_tokens": 100_000,
    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 100_000},
    "cache_read_input_tokens": 0,
    "output_tokens": 10_000,
}


class _Provider(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    betas: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.betas.append(self.headers.get("anthropic-beta") or "")
        body = json.dumps(
            {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "usage": USAGE,
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_long_context_and_1h_cache_writes_are_billed_at_their_rates(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    broker = Broker(
        upstream=f"http://127.0.0.1:{server.server_port}",
        api_key="sk-real",
        model="anthropic/claude-sonnet-4-5",
        exchanges=tmp_path / "x.jsonl",
        budget=50.0,
    ).start()
    try:
        system = [
            {
                "type": "text",
                "text": "x" * 1000,
                "cache_control": {"type": "ephemeral", "ttl": "1h"},
            }
        ]
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 10_000,
            "system": system,
            "messages": [{"role": "user", "content": "y " * 2_000_000}],
        }
        reply = post_as_relay(
            broker,
            "/v1/messages",
            json.dumps(body).encode(),
            {"x-api-key": "p", "anthropic-beta": "context-1m-2025-08-07"},
        )
        assert reply.status_code == 200
        assert _Provider.betas == ["context-1m-2025-08-07"]  # the sandbox's choice reached it
        assert broker.ledger.spent >= 5.0, broker.ledger.spent  # observed: 2.925
    finally:
        broker.stop()
        server.shutdown()
        server.server_close()
