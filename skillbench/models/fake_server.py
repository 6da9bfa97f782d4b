"""A fake model server speaking the providers' wire protocols, driven by a script.

`POST /v1/messages` (Anthropic Messages, JSON or streamed), `POST /v1/chat/completions` (OpenAI
Chat Completions) and `POST /v1/responses` (OpenAI Responses, streamed: what Codex speaks).
Tests point the real SDKs and agent CLIs at it through their base URLs; nothing is patched.
The script (skillbench.models.script) decides each reply, including faults: a status with
Retry-After, a stall past the client's timeout, a malformed body, a stream cut off.
Every request is logged for tests to assert on.

    python -m skillbench.models.fake_server SCRIPT.yaml [--port N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec

from skillbench.models.script import Play, Player, Script, ScriptError, load_script, parse_script


def sdk_env(url: str) -> dict[str, str]:
    """Environment variables that point both SDKs at a fake server."""
    return {
        "ANTHROPIC_BASE_URL": url,
        "OPENAI_BASE_URL": f"{url}/v1",
        "ANTHROPIC_API_KEY": "sk-ant-fake-server-key",
        "OPENAI_API_KEY": "sk-fake-server-key",
    }


class LoggedRequest(msgspec.Struct):
    """One request the server answered, and how."""

    protocol: str  # "anthropic" | "openai" | "responses"
    path: str
    body: dict[str, Any]
    status: int
    source: str = ""
    step: int = 0
    usage: dict[str, int] = {}
    at: float = 0.0
    api_key: str = ""  # the credential the client sent (x-api-key, or a bearer token)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def anthropic_shape(body: dict[str, Any]) -> tuple[str, str, str, int]:
    system = _text(body.get("system", ""))
    users = [_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user"]
    turns = sum(m.get("role") == "assistant" for m in body.get("messages", []))
    return system, (users[0] if users else ""), (users[-1] if users else ""), turns


def openai_shape(body: dict[str, Any]) -> tuple[str, str, str, int]:
    messages = body.get("messages", [])
    system = "".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    turns = sum(m.get("role") == "assistant" for m in messages)
    return system, (users[0] if users else ""), (users[-1] if users else ""), turns


_OUTPUT_ITEMS = {"function_call", "custom_tool_call", "reasoning", "local_shell_call"}
_CONTEXT_TAGS = ("<environment_context>", "<user_instructions>", "# AGENTS.md")


def responses_shape(body: dict[str, Any]) -> tuple[str, str, str, int]:
    """A Responses request: the instructions and developer messages are the system prompt;
    the user messages the harness adds about its environment are not the user's."""
    items = [i for i in body.get("input", []) if isinstance(i, dict)]
    system = _text(body.get("instructions", "")) + "".join(
        _text(i.get("content")) for i in items if i.get("role") in ("developer", "system")
    )
    users = [
        t
        for i in items
        if i.get("role") == "user"
        if not (t := _text(i.get("content"))).lstrip().startswith(_CONTEXT_TAGS)
    ]
    turns, was_output = 0, False
    for item in items:  # one assistant turn is a run of output items
        output = item.get("type") in _OUTPUT_ITEMS or item.get("role") == "assistant"
        turns += output and not was_output
        was_output = output
    return system, (users[0] if users else ""), (users[-1] if users else ""), turns


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # the default backlog (5) refuses connections at 64 in flight


class FakeModelServer:
    """Serves a script on 127.0.0.1 (a free port unless given) in a background thread."""

    def __init__(self, script: Script, *, port: int = 0):
        self.player = Player(script)
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
        route = h.path.split("?", 1)[0].rstrip("/")  # Claude Code asks /v1/messages?beta=true
        if route.endswith("/v1/messages"):
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
        key = h.headers.get("x-api-key") or h.headers.get("Authorization", "").removeprefix(
            "Bearer "
        )
        entry = LoggedRequest(protocol, h.path, body, 200, at=time.time(), api_key=key)
        with self._lock:
            self.requests.append(entry)
        try:
            play = self.player.play(system, first, last, turns)
        except ScriptError as exc:
            # a 400, not a 500: asking again cannot match, so the agent (a CLI too) stops at
            # once, and the message is the session's error (see Broker.rejected)
            entry.status = 400
            return self._send(
                h, 400, _error(protocol, "invalid_request_error", f"scripted model: {exc}")
            )
        entry.source, entry.step = play.source, play.step
        if play.fault is not None:
            return self._fault(h, entry, play)
        if play.latency:
            time.sleep(play.latency)
        reply, usage = _REPLIES[protocol](body, play, raw, turns)
        entry.usage = usage
        if protocol == "responses":
            return self._stream_events(h, _response_events(reply))
        if protocol == "anthropic" and body.get("stream"):
            return self._stream_events(h, _message_events(reply))
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

    def _fault(self, h: BaseHTTPRequestHandler, entry: LoggedRequest, play: Play) -> None:
        fault = play.fault
        assert fault is not None
        if fault.stall:
            time.sleep(fault.stall)
        if fault.malformed:
            entry.status = 200
            return self._send_raw(h, 200, b'{"id": "msg_broken", "content": [', {})
        if fault.midstream:  # a 200 whose event stream stops after its first event
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
            first = ("message_start", {"message": cut})
            if entry.protocol == "responses":
                first = (
                    "response.created",
                    {"response": {"id": "resp_cut", "output": [], "status": "in_progress"}},
                )
            return self._stream_events(h, [first])
        status = fault.status or 500
        entry.status = status
        headers = {}
        if fault.retry_after is not None:
            headers["retry-after"] = f"{fault.retry_after:g}"
            headers["retry-after-ms"] = str(int(fault.retry_after * 1000))
        kind = _ERROR_KINDS.get(status, "api_error")
        message = fault.message or f"injected fault {status}"
        body = json.dumps(_error(entry.protocol, kind, message)).encode()
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


_ERROR_KINDS = {
    429: "rate_limit_error",
    401: "authentication_error",
    403: "permission_error",
    400: "invalid_request_error",
}


def _message_events(reply: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A Messages reply as the API streams it, block by block."""
    content, usage = reply["content"], reply["usage"]
    start = {**reply, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": start})]
    for i, block in enumerate(content):
        opened: dict[str, Any]
        delta: dict[str, Any]
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"index": i, "content_block": opened}),
            ("content_block_delta", {"index": i, "delta": delta}),
            ("content_block_stop", {"index": i}),
        ]
    events += [
        (
            "message_delta",
            {
                "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        ),
        ("message_stop", {}),
    ]
    return events


def _response_events(reply: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A Responses reply as the API streams it: created, each output item added, its text
    delta, done, then completed with the usage."""
    opened = {**reply, "status": "in_progress", "output": [], "usage": None}
    events: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": opened})]
    for i, item in enumerate(reply["output"]):
        events.append(("response.output_item.added", {"output_index": i, "item": item}))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                (
                    "response.output_text.delta",
                    {"item_id": item["id"], "output_index": i, "content_index": 0, "delta": text},
                )
            )
        events.append(("response.output_item.done", {"output_index": i, "item": item}))
    events.append(("response.completed", {"response": reply}))
    return events


def _error(protocol: str, kind: str, message: str) -> dict[str, Any]:
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"type": kind, "message": message, "code": kind}}


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _anthropic_reply(body: dict[str, Any], play: Play, raw: bytes, turns: int):
    content: list[dict[str, Any]] = [{"type": "text", "text": play.text}] if play.text else []
    for j, (name, args) in enumerate(play.tool_calls):
        content.append(
            {"type": "tool_use", "id": f"toolu_{turns}_{j}", "name": name, "input": args}
        )
    system = _text(body.get("system", ""))
    cached = _tokens(system) if system and isinstance(body.get("system"), list) else 0
    usage = {
        "input_tokens": max(1, _tokens(raw.decode(errors="replace")) - cached),
        "output_tokens": _tokens(play.text + json.dumps([a for _, a in play.tool_calls])),
        "cache_creation_input_tokens": cached if turns == 0 else 0,
        "cache_read_input_tokens": cached if turns > 0 else 0,
    }
    stop = play.stop_reason or ("tool_use" if play.tool_calls else "end_turn")
    reply = {
        "id": f"msg_fake_{turns}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    return reply, usage


_OPENAI_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def _openai_reply(body: dict[str, Any], play: Play, raw: bytes, turns: int):
    calls = [
        {
            "id": f"call_{turns}_{j}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for j, (name, args) in enumerate(play.tool_calls)
    ]
    system = "".join(
        _text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system"
    )
    cached = _tokens(system) if system and turns > 0 else 0
    prompt = _tokens(raw.decode(errors="replace"))
    completion = _tokens(play.text + json.dumps([a for _, a in play.tool_calls]))
    stop = play.stop_reason or ("tool_use" if play.tool_calls else "end_turn")
    message: dict[str, Any] = {"role": "assistant", "content": play.text or None}
    if calls:
        message["tool_calls"] = calls
    reply = {
        "id": f"chatcmpl-fake-{turns}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": _OPENAI_FINISH[stop]}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }
    usage = {
        "input_tokens": prompt - cached,
        "output_tokens": completion,
        "cache_read_input_tokens": cached,
    }
    return reply, usage


def _responses_reply(body: dict[str, Any], play: Play, raw: bytes, turns: int):
    output: list[dict[str, Any]] = []
    if play.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{turns}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": play.text, "annotations": []}],
            }
        )
    for j, (name, args) in enumerate(play.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{turns}_{j}",
                "status": "completed",
                "call_id": f"call_{turns}_{j}",
                "name": name,
                "arguments": json.dumps(args),
            }
        )
    system, _, _, _ = responses_shape(body)
    cached = _tokens(system) if turns > 0 else 0
    prompt = _tokens(raw.decode(errors="replace"))
    completion = _tokens(play.text + json.dumps([a for _, a in play.tool_calls]))
    reply = {
        "id": f"resp_fake_{turns}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": body.get("model", "fake"),
        "output": output,
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }
    usage = {
        "input_tokens": prompt - cached,
        "output_tokens": completion,
        "cache_read_input_tokens": cached,
    }
    return reply, usage


_REPLIES = {"anthropic": _anthropic_reply, "openai": _openai_reply, "responses": _responses_reply}


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
