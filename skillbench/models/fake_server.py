"""A fake model server speaking the providers' wire protocols, driven by a script.

`POST /v1/messages` (Anthropic Messages, JSON or streamed), `POST /v1/chat/completions` (OpenAI
Chat Completions, JSON or streamed: what Copilot CLI speaks), `POST /v1/responses` (OpenAI
Responses, streamed: what Codex speaks) and `POST /v1beta/models/<model>:generateContent`,
`:streamGenerateContent?alt=sse` and `:countTokens` (the Gemini API: what Gemini CLI and the
google-genai SDK speak).
Tests point the real SDKs and agent CLIs at it through their base URLs; nothing is patched.
The script (skillbench.models.script) decides each reply, including faults: a status with
Retry-After, a stall past the client's timeout, a malformed body, a stream cut off.
Every request is logged for tests to assert on. What each protocol's requests and replies
look like is fake_wire.py; this module is the HTTP side: routing, faults, logging.

    python -m skillbench.models.fake_server SCRIPT.yaml [--port N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec

from skillbench.models.fake_cache import PrefixCache, TooManyBreakpoints
from skillbench.models.fake_wire import (
    ERROR_KINDS,
    REPLIES,
    anthropic_shape,
    chat_chunks,
    error_body,
    gemini_chunks,
    gemini_shape,
    message_events,
    openai_shape,
    response_events,
    responses_shape,
)
from skillbench.models.script import Play, Player, Script, ScriptError, load_script, parse_script


def sdk_env(url: str) -> dict[str, str]:
    """Environment variables that point the SDKs at a fake server."""
    return {
        "ANTHROPIC_BASE_URL": url,
        "OPENAI_BASE_URL": f"{url}/v1",
        "GOOGLE_GEMINI_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-server-key",
        "OPENAI_API_KEY": "sk-fake-server-key",
        "GEMINI_API_KEY": "fake-server-gemini-key",
    }


# the Gemini API's targets: /v1beta/models/<model>:<verb>
_GEMINI = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")


class LoggedRequest(msgspec.Struct):
    """One request the server answered, and how."""

    protocol: str  # "anthropic" | "openai" | "responses" | "gemini"
    path: str
    body: dict[str, Any]
    status: int
    source: str = ""
    step: int = 0
    usage: dict[str, Any] = {}
    at: float = 0.0
    api_key: str = ""  # the credential the client sent (x-api-key, x-goog-api-key, a bearer)
    query_key: str = ""  # a Gemini key sent as `?key=` (the broker never sends one)


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # the default backlog (5) refuses connections at 64 in flight

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that went away (a run stopped with a call in flight, a kept-alive
        # connection closed) is no error of the server's: socketserver would print a
        # traceback into the stderr of the skillbench process that serves the script
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class FakeModelServer:
    """Serves a script on 127.0.0.1 (a free port unless given) in a background thread."""

    def __init__(self, script: Script, *, port: int = 0):
        self.player = Player(script)
        self.cache = PrefixCache(script.cache_min_tokens)
        self.requests: list[LoggedRequest] = []
        self._lock = threading.Lock()
        self.in_flight = self.peak_in_flight = 0  # requests being answered now / at most
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in two writes: without this, Nagle's algorithm and
            # the client's delayed ACK add ~40 ms to every reply
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                server._handle(self)

        self._httpd = _Server(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def env(self) -> dict[str, str]:
        """The environment that points both SDKs here."""
        return sdk_env(self.url)

    def start(self) -> FakeModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log(self, protocol: str | None = None) -> list[LoggedRequest]:
        with self._lock:
            return [r for r in self.requests if protocol is None or r.protocol == protocol]

    # --- answering ------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            self._answer(h)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, h: BaseHTTPRequestHandler) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        route, _, query = h.path.partition("?")  # Claude Code asks /v1/messages?beta=true
        route = route.rstrip("/")
        model, verb = "", ""
        if (named := _GEMINI.search(route)) is not None:
            model, verb = named.groups()
        if verb:
            protocol, shape = "gemini", gemini_shape
        elif route.endswith("/v1/messages"):
            protocol, shape = "anthropic", anthropic_shape
        elif route.endswith("/chat/completions"):
            protocol, shape = "openai", openai_shape
        elif route.endswith("/responses"):
            protocol, shape = "responses", responses_shape
        else:
            return self._send(h, 404, {"error": {"message": f"no route {h.path}"}})
        try:
            body = json.loads(raw)
        except ValueError:
            return self._send(
                h, 400, {"error": {"type": "invalid_request_error", "message": "body is not JSON"}}
            )
        system, first, last, turns = shape(body)
        key = (
            h.headers.get("x-api-key")
            or h.headers.get("x-goog-api-key")
            or h.headers.get("Authorization", "").removeprefix("Bearer ")
        )
        entry = LoggedRequest(protocol, h.path, body, 200, at=time.time(), api_key=key)
        entry.query_key = next((v for k, v in urllib.parse.parse_qsl(query) if k == "key"), "")
        with self._lock:
            self.requests.append(entry)
            serial = len(self.requests)
        if verb == "countTokens":  # not a turn: nothing of the script is played
            return self._send(h, 200, {"totalTokens": max(1, len(raw) // 4)})
        try:
            play = self.player.play(system, first, last, turns)
        except ScriptError as exc:
            # a 400, not a 500: asking again cannot match, so the agent (a CLI too) stops at
            # once, and the message is the session's error (see Broker.rejected)
            entry.status = 400
            return self._send(
                h, 400, error_body(protocol, "invalid_request_error", f"scripted model: {exc}")
            )
        entry.source, entry.step = play.source, play.step
        if play.fault is not None:
            return self._fault(h, entry, play)
        try:
            cached, entries = (
                self.cache.anthropic(body)
                if protocol == "anthropic"
                else self.cache.openai(body, protocol)
            )
        except TooManyBreakpoints as exc:
            entry.status = 400
            return self._send(h, 400, error_body(protocol, "invalid_request_error", str(exc)))
        if play.latency:
            time.sleep(play.latency)
        reply, usage = REPLIES[protocol](
            {**body, "model": model} if model else body, play, raw, serial, cached
        )
        entry.usage = usage
        self.cache.keep(entries)  # an entry is readable once its request is answered
        if protocol == "gemini" and verb == "streamGenerateContent":
            return self._stream_chunks(h, gemini_chunks(reply))
        if protocol == "responses":
            return self._stream_events(h, response_events(reply))
        if protocol == "anthropic" and body.get("stream"):
            return self._stream_events(h, message_events(reply))
        if protocol == "openai" and body.get("stream"):
            asked = (body.get("stream_options") or {}).get("include_usage") is True
            return self._stream_chunks(h, chat_chunks(reply, asked), end=b"data: [DONE]\r\n\r\n")
        self._send(h, 200, reply)

    @staticmethod
    def _stream_events(h: BaseHTTPRequestHandler, events: list[tuple[str, dict[str, Any]]]):
        """Server-sent events, one write each; the end of the stream is the end of the body."""
        try:
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Cache-Control", "no-cache")
            h.send_header("Connection", "close")
            h.end_headers()
            for name, data in events:
                h.wfile.write(
                    f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()
                )
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        h.close_connection = True

    @staticmethod
    def _stream_chunks(
        h: BaseHTTPRequestHandler, chunks: list[dict[str, Any]], end: bytes = b""
    ) -> None:
        """The Gemini API's stream (and Chat Completions', which `end`s with its `[DONE]`):
        `data:` lines of whole JSON objects, no event names."""
        try:
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Connection", "close")
            h.end_headers()
            for chunk in chunks:
                h.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
                h.wfile.flush()
            if end:
                h.wfile.write(end)
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        h.close_connection = True

    def _fault(self, h: BaseHTTPRequestHandler, entry: LoggedRequest, play: Play) -> None:
        fault = play.fault
        assert fault is not None
        if fault.stall:
            time.sleep(fault.stall)
        if fault.malformed:
            entry.status = 200
            return self._send_raw(h, 200, b'{"id": "msg_broken", "content": [', {})
        if fault.midstream:  # a 200 whose event stream stops in its answer's first words
            entry.status = 200
            cut: dict[str, Any] = {
                "id": "msg_cut",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "fake",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
            first: list[tuple[str, dict[str, Any]]] = [
                ("message_start", {"message": cut}),
                (
                    "content_block_start",
                    {"index": 0, "content_block": {"type": "text", "text": ""}},
                ),
                (
                    "content_block_delta",
                    {"index": 0, "delta": {"type": "text_delta", "text": "cut"}},
                ),
            ]
            if entry.protocol == "gemini":
                part = {"content": {"role": "model", "parts": [{"text": "cut"}]}, "index": 0}
                usage = {"promptTokenCount": 1, "totalTokenCount": 1}
                return self._stream_chunks(h, [{"candidates": [part], "usageMetadata": usage}])
            if entry.protocol == "openai" and entry.body.get("stream"):  # no [DONE]
                delta = {"role": "assistant", "content": "cut"}
                head = {"id": "chatcmpl-cut", "object": "chat.completion.chunk", "model": "fake"}
                return self._stream_chunks(h, [{**head, "choices": [{"index": 0, "delta": delta}]}])
            if entry.protocol == "responses":
                first = [
                    (
                        "response.created",
                        {"response": {"id": "resp_cut", "output": [], "status": "in_progress"}},
                    )
                ]
            return self._stream_events(h, first)
        status = fault.status or 500
        entry.status = status
        headers = {}
        if fault.retry_after is not None:
            headers["retry-after"] = f"{fault.retry_after:g}"
            headers["retry-after-ms"] = str(int(fault.retry_after * 1000))
        kind = ERROR_KINDS.get(status, "api_error")
        message = fault.message or f"injected fault {status}"
        body = json.dumps(error_body(entry.protocol, kind, message, status)).encode()
        self._send_raw(h, status, body, headers)

    def _send(self, h: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        self._send_raw(h, status, json.dumps(payload).encode(), {})

    @staticmethod
    def _send_raw(h: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str]):
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                h.send_header(key, value)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a stall past its timeout)


class SpawnedServer:
    """A fake server in its own process (for benchmarks: it must not share our GIL)."""

    def __init__(self, script: dict[str, Any]):
        folder = tempfile.mkdtemp(prefix="fake-model-")
        path = os.path.join(folder, "script.json")
        with open(path, "w") as fh:
            json.dump(script, fh)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__, path], stdout=subprocess.PIPE, text=True
        )
        assert self._proc.stdout is not None
        self.url = self._proc.stdout.readline().strip()
        if not self.url:
            raise RuntimeError("the fake model server did not start")

    def env(self) -> dict[str, str]:
        """The environment that points both SDKs here."""
        return sdk_env(self.url)

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve a script as a fake model API.")
    parser.add_argument("script", help="a script YAML file")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    from pathlib import Path

    path = Path(args.script)
    script = (
        parse_script(json.loads(path.read_text()), str(path))
        if path.suffix == ".json"
        else load_script(path)
    )
    server = FakeModelServer(script, port=args.port).start()
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
