"""Outside red team 7 (issue 38, BR2 family): a sandbox asks for a premium service tier.

OpenAI's `service_tier: "priority"` (Chat Completions and Responses) and Anthropic's fast mode
(`speed: "fast"`, opted into with an `anthropic-beta` header the broker forwards) bill the
same tokens at a multiple of the standard price, and the usage the provider returns counts
tokens, not the tier. The broker reserves and bills at the standard price, so a candidate that
asks for the premium tier spends past its `--max-cost` while the ledger shows a fraction.
The broker must refuse such a call before it is forwarded; the standard tiers still pass.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from skillbench.broker.server import Broker
from tests.security.test_broker_attacks import post_as_relay


class _Provider(BaseHTTPRequestHandler):
    """Answers every call with a tiny body carrying a usage; records what it was sent."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.seen.append(body)
        usage = {"input_tokens": 10, "output_tokens": 10, "prompt_tokens": 10}
        data = json.dumps({"id": "x", "usage": {**usage, "completion_tokens": 10}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    handler = type("P", (_Provider,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", handler.seen
    server.shutdown()
    server.server_close()


def _broker(url: str, tmp_path: Path, wire: str, model: str) -> Broker:
    base = f"{url}/v1" if wire == "openai" else url
    return Broker(
        upstream=base,
        api_key="sk-real",
        model=model,
        wire=wire,
        exchanges=tmp_path / "x.jsonl",
        budget=5.0,
    ).start()


_CHAT = {
    "model": "gpt-5",
    "max_completion_tokens": 100,
    "messages": [{"role": "user", "content": "hi"}],
}
_RESP = {"model": "gpt-5", "max_output_tokens": 100, "input": "hi"}


@pytest.mark.parametrize(
    ("target", "body"),
    [("/v1/chat/completions", _CHAT), ("/v1/responses", _RESP)],
)
def test_openai_priority_tier_is_refused(provider, tmp_path: Path, target, body) -> None:
    url, seen = provider
    broker = _broker(url, tmp_path, "openai", "openai/gpt-5")
    try:
        for tier in ("priority", "scale", "PRIORITY"):
            data = json.dumps({**body, "service_tier": tier}).encode()
            reply = post_as_relay(broker, target, data, {"authorization": "p"})
            assert reply.status_code == 400 and b"service_tier" in reply.content, tier
        assert seen == []  # never forwarded
        for tier in ("auto", "default", "flex"):  # the standard price or less: forwarded
            data = json.dumps({**body, "service_tier": tier}).encode()
            assert post_as_relay(broker, target, data, {"authorization": "p"}).status_code == 200
    finally:
        broker.stop()
    assert [b.get("service_tier") for b in seen] == ["auto", "default", "flex"]


def test_anthropic_fast_mode_is_refused(provider, tmp_path: Path) -> None:
    url, seen = provider
    broker = _broker(url, tmp_path, "anthropic", "anthropic/claude-opus-4-6")
    body = {
        "model": "claude-opus-4-6",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
    }
    headers = {"x-api-key": "p", "anthropic-beta": "fast-mode-2026-02-01"}
    try:
        data = json.dumps({**body, "speed": "fast"}).encode()
        reply = post_as_relay(broker, "/v1/messages?beta=true", data, headers)
        assert reply.status_code == 400 and b"speed" in reply.content
        assert seen == []
        data = json.dumps({**body, "speed": "standard"}).encode()
        assert post_as_relay(broker, "/v1/messages?beta=true", data, headers).status_code == 200
    finally:
        broker.stop()
    assert [b.get("speed") for b in seen] == ["standard"]


# --- stored context of the key's owner: Responses' previous_response_id, conversation, prompt ---
# The provider loads a stored response, conversation or prompt of the key's owner (another
# session's, the other arm's, another run's) into the call: the sandbox reads what it was never
# given, and the call's input is no longer bounded by its body (the reservation's premise), as
# the broker already refuses Gemini's `cachedContent` for.


@pytest.mark.parametrize(
    "extra",
    [
        {"previous_response_id": "resp_other_session"},
        {"conversation": "conv_other_session"},
        {"conversation": {"id": "conv_other_session"}},
        {"prompt": {"id": "pmpt_key_owners", "version": "1"}},
    ],
)
def test_responses_stored_context_is_refused(provider, tmp_path: Path, extra) -> None:
    url, seen = provider
    broker = _broker(url, tmp_path, "openai", "openai/gpt-5")
    try:
        data = json.dumps({**_RESP, **extra}).encode()
        reply = post_as_relay(broker, "/v1/responses", data, {"authorization": "p"})
        assert reply.status_code == 400 and next(iter(extra)).encode() in reply.content
        assert seen == []
        # absent or null (as an SDK may send it): forwarded
        data = json.dumps({**_RESP, next(iter(extra)): None}).encode()
        assert (
            post_as_relay(broker, "/v1/responses", data, {"authorization": "p"}).status_code == 200
        )
    finally:
        broker.stop()
    assert len(seen) == 1
