"""RT5-BR (redteam5): a session's model-call cap (Broker.max_requests: the case's max_turns for
a CLI without a turn cap of its own, Codex) counts only calls that ended whole
(`answered`). A call the sandbox hangs up on after reading what it needed is a "failure"
(wire.cut), never counted: the sandbox (the CLI, or the agent's own curl to the broker's
loopback port) gets as many model calls as it likes past max_turns, each billed its
reservation, so only --max-cost bounds them. The cap is fairness between arms, not budget.

Fixed: a call counts against the cap once it is forwarded, whatever happens after; the third
call is refused ("this session's cap of 2 model calls is reached").
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from skillbench.broker.server import Broker
from tests.security.test_broker_billing_attacks import _Generating, serve  # noqa: F401


def test_hanging_up_each_call_escapes_the_sessions_call_cap(serve, tmp_path: Path) -> None:  # noqa: F811
    handler = type("H", (_Generating,), {"generated": []})
    calls: list[int] = []

    class Counting(handler):  # type: ignore[misc, valid-type]
        def do_POST(self) -> None:
            calls.append(1)
            super().do_POST()

    broker = Broker(
        upstream=serve(Counting),
        api_key="sk-real",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
        budget=50.0,
        max_requests=2,
    ).start()
    body = json.dumps(
        {"model": "claude-sonnet-4-6", "max_tokens": 800, "stream": True, "messages": []}
    ).encode()
    refused = 0
    try:
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
                s.sendall(
                    broker.preamble + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n"
                    b"content-type: application/json\r\n"
                    + f"x-api-key: {broker.client_key}\r\n".encode()
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                seen = b""
                while b"content_block_delta" not in seen and b"cap of" not in seen:
                    if not (more := s.recv(65536)):
                        break
                    seen += more
                refused += b"cap of 2 model calls" in seen
            time.sleep(0.3)  # (the broker settles the hung-up call)
    finally:
        broker.stop()
    assert len(calls) <= 2 and refused == 3, (len(calls), refused)
