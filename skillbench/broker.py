"""The model broker (design §10): how an agent CLI inside a sandbox reaches its model.

The sandbox has no network and holds only a placeholder key. The CLI talks to a loopback port
in its sandbox; the executor relays those bytes to this broker on the host (one broker per
session), which forwards each request to the provider's base URL with the real key, passes
the response through as it arrives (server-sent events, unbuffered), counts tokens and cost
from the provider's own usage (so the cost is known whatever the CLI reports), refuses
requests once the session's budget is spent, and writes every exchange, scrubbed, to
`exchanges/<case>.<arm>.<rep>.jsonl`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

import httpx
import msgspec

from skillbench.models.base import Usage
from skillbench.models.pricing import Price, cost_usd
from skillbench.scrub import scrub_obj

# Headers that belong to one hop, or carry credentials the sandbox must not choose.
_DROP = {
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    "keep-alive",
    "x-api-key",
    "authorization",
    "accept-encoding",
    "proxy-authorization",
}
_KEEP_LOG = 1 << 20  # characters of a response kept in the exchange log


class Broker:
    """One session's broker: start() it, point the sandbox's relay at `port`, stop() it."""

    def __init__(
        self,
        *,
        upstream: str,
        api_key: str,
        model: str,
        exchanges: Path,
        wire: str = "anthropic",
        prices: Mapping[str, Price] | None = None,
        budget: float | None = None,
        max_requests: int | None = None,
    ):
        self.upstream = upstream.rstrip("/")
        self.wire = WIRES[wire]
        self.max_requests = max_requests  # the session's model-call cap, where the CLI has none
        self.model = model  # the reference prices are looked up by
        self.prices = prices
        self.budget = budget
        self.usage = Usage()
        self.answered = 0  # requests the provider answered (2xx): the session's model turns
        self.failures = 0  # requests the provider could not be reached for, or answered 5xx
        self.exhausted = False  # a request was refused because the budget was spent
        self.capped = False  # a request was refused because max_requests were answered
        self.first_request: dict[str, Any] | None = None  # what the CLI first asked (its prompt)
        self._key = api_key
        self._lock = threading.Lock()
        exchanges.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[str] = exchanges.open("a", encoding="utf-8")
        self._client = httpx.Client(timeout=httpx.Timeout(600.0, connect=30.0))
        broker = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                broker._forward(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def cost(self) -> float | None:
        """What the session's model calls cost so far (None when the price is unknown)."""
        return cost_usd(self.model, self.usage, self.prices)

    def start(self) -> Broker:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()
        self._log.close()

    # --- one request ------------------------------------------------------------------------

    def _forward(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        if self.first_request is None:
            with contextlib.suppress(ValueError):
                self.first_request = json.loads(body)
        spent = self.cost
        if self.budget is not None and spent is not None and spent >= self.budget:
            self.exhausted = True
            why = "skillbench: this session's share of --max-cost is spent"
            self._reply_error(h, 400, "invalid_request_error", why)
            self._record(h.path, body, 400, "budget")
            return
        if self.max_requests is not None and self.answered >= self.max_requests:
            self.capped = True
            why = f"skillbench: this session's cap of {self.max_requests} model calls is reached"
            self._reply_error(h, 400, "invalid_request_error", why)
            self._record(h.path, body, 400, "cap")
            return
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _DROP}
        headers.update(self.wire.auth(self._key))
        headers["accept-encoding"] = "identity"  # the usage is read from the stream as it passes
        seen, status = bytearray(), 502  # what passed through
        try:
            with self._client.stream(
                "POST", self.upstream + h.path, content=body, headers=headers
            ) as resp:
                status = resp.status_code
                h.send_response(status)
                for key, value in resp.headers.items():
                    if key.lower() not in _DROP and key.lower() != "content-encoding":
                        h.send_header(key, value)
                h.send_header("Connection", "close")  # the end of the body is the end of it
                h.end_headers()
                h.close_connection = True
                for chunk in resp.iter_raw():
                    seen += chunk
                    h.wfile.write(chunk)
                    h.wfile.flush()
        except httpx.HTTPError as exc:
            with self._lock:
                self.failures += 1
            self._reply_error(
                h,
                502,
                "api_error",
                f"skillbench broker: provider unreachable: {type(exc).__name__}",
            )
            self._record(h.path, body, 502, str(exc))
            return
        except OSError:
            pass  # the CLI went away mid-stream: what it used still counts
        text = seen.decode(errors="replace")
        usage = self.wire.usage(text)
        with self._lock:
            self.usage = self.usage + usage
            if status >= 500 or status == 429 or self.wire.cut(text):
                self.failures += 1
            elif 200 <= status < 300:
                self.answered += 1
        self._record(h.path, body, status, text, usage)

    def _reply_error(self, h: BaseHTTPRequestHandler, status: int, kind: str, msg: str) -> None:
        data = json.dumps(self.wire.error(kind, msg)).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except OSError:
            pass

    def _record(
        self, path: str, body: bytes, status: int, response: str, usage: Usage | None = None
    ) -> None:
        try:
            request: Any = json.loads(body)
        except ValueError:
            request = body.decode(errors="replace")
        line = {
            "at": time.time(),
            "path": path,
            "status": status,
            "request": request,
            "response": response[-_KEEP_LOG:],
            "usage": None if usage is None else _plain(usage),
        }
        with self._lock:
            self._log.write(json.dumps(scrub_obj(line), ensure_ascii=False) + "\n")
            self._log.flush()


def _plain(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


def _events(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a response: the `data:` lines of an event stream, or the body."""
    payloads = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    out = []
    for payload in payloads or [text]:
        try:
            event = json.loads(payload)
        except ValueError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def _anthropic_usage(text: str) -> Usage:
    """From a Messages body, or the `message_start` / `message_delta` events of a stream
    (later events carry the running totals)."""
    found: dict[str, int] = {}
    for event in _events(text):
        raw = event.get("usage") or (event.get("message") or {}).get("usage") or {}
        for key, value in raw.items():
            if isinstance(value, int):
                found[key] = value
    return Usage(
        input_tokens=found.get("input_tokens", 0),
        output_tokens=found.get("output_tokens", 0),
        cache_read_tokens=found.get("cache_read_input_tokens", 0),
        cache_write_tokens=found.get("cache_creation_input_tokens", 0),
    )


def _openai_usage(text: str) -> Usage:
    """From a Responses body or its stream's `response.completed` event (or a Chat
    Completions body); OpenAI counts cached tokens inside the input tokens."""
    usage = Usage()
    for event in _events(text):
        raw = (event.get("response") or {}).get("usage") or event.get("usage")
        if not isinstance(raw, dict):
            continue
        details = raw.get("input_tokens_details") or raw.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or 0)
        total_in = int(raw.get("input_tokens") or raw.get("prompt_tokens") or 0)
        usage = Usage(
            input_tokens=max(0, total_in - cached),
            output_tokens=int(raw.get("output_tokens") or raw.get("completion_tokens") or 0),
            cache_read_tokens=cached,
        )
    return usage


class Wire(msgspec.Struct, frozen=True):
    """What differs between providers' APIs for a broker: how the key is sent, where usage
    is, what a stream cut off mid-response looks like, and the shape of an error."""

    auth: Callable[[str], dict[str, str]]
    usage: Callable[[str], Usage]
    cut: Callable[[str], bool]
    error: Callable[[str, str], dict[str, Any]]


WIRES: dict[str, Wire] = {
    "anthropic": Wire(
        auth=lambda key: {"x-api-key": key},
        usage=_anthropic_usage,
        cut=lambda text: "event: message_start" in text and "message_stop" not in text,
        error=lambda kind, msg: {"type": "error", "error": {"type": kind, "message": msg}},
    ),
    "openai": Wire(
        auth=lambda key: {"authorization": f"Bearer {key}"},
        usage=_openai_usage,
        cut=lambda text: (
            "response.created" in text
            and not any(
                end in text
                for end in ("response.completed", "response.failed", "response.incomplete")
            )
        ),
        error=lambda kind, msg: {"error": {"type": kind, "message": msg, "code": kind}},
    ),
}
