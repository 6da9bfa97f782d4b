"""A CLI's event stream cut short (the CLI killed mid-session, its last line half written) is no
end of the session: every agent CLI's reader must say so (no stop reason: the session is an
infrastructure error, docs/agents.md), at every byte a stream can be cut at before its end
event, and read the same stream whole as the end it is. The streams are each CLI's own events,
in the shapes its reader maps. A model stream cut mid-answer is tests/agents/test_agents.py's
`stream-cut` case, run by the real CLIs; a CLI that retries it without end (OpenCode) is
stopped at its broker, and a session that ended on a failed call is no answer."""

from __future__ import annotations

import contextlib
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from skillbench.agents import claude_code, codex, gemini_cli, opencode
from skillbench.broker.server import Broker
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.script import parse_script
from skillbench.results.transcript import TraceWriter
from tests.broker.test_broker_access import _REPLY
from tests.security.test_broker_attacks import post_as_relay
from tests.security.test_broker_billing_attacks import serve  # noqa: F401  (upstreams)

_HI = {"role": "user", "content": "hi"}

# one tool call and a final answer, as each CLI streams it (its end event last)
STREAMS: dict[str, list[dict[str, Any]]] = {
    "claude-code": [
        {"type": "system", "subtype": "init", "skills": []},
        {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        },
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}]}},
        {"type": "result", "subtype": "success", "is_error": False},
    ],
    "codex": [
        {"type": "thread.started"},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {"id": "i1", "type": "command_execution", "command": "ls", "exit_code": 0},
        },
        {"type": "item.completed", "item": {"id": "i2", "type": "agent_message", "text": "done"}},
        {"type": "turn.completed", "usage": {}},
    ],
    "opencode": [
        {"type": "step_start", "part": {}},
        {
            "type": "tool_use",
            "part": {"callID": "c1", "tool": "bash", "state": {"status": "completed"}},
        },
        {"type": "step_finish", "part": {"reason": "tool-calls"}},
        {"type": "step_start", "part": {}},
        {"type": "text", "part": {"text": "done"}},
        {"type": "step_finish", "part": {"reason": "stop"}},
    ],
    "gemini-cli": [
        {"type": "init", "session_id": "s", "model": "gemini-2.5-pro"},
        {"type": "tool_use", "tool_id": "t1", "tool_name": "run_shell_command", "parameters": {}},
        {"type": "tool_result", "tool_id": "t1", "status": "success", "output": "ok"},
        {"type": "message", "role": "assistant", "content": "done"},
        {"type": "result", "status": "success", "stats": {}},
    ],
}
REPLAY = {
    "claude-code": lambda out, trace: claude_code._replay(out, trace)[0],
    "codex": codex._replay,
    "opencode": opencode._replay,
    "gemini-cli": gemini_cli._replay,
}


def _stop(agent: str, stdout: str, tmp_path: Path) -> str | None:
    trace = TraceWriter(tmp_path / "t.jsonl")
    try:
        return REPLAY[agent](stdout, trace)
    finally:
        trace.close()


@pytest.mark.parametrize("agent", sorted(STREAMS))
def test_a_stream_cut_anywhere_before_its_end_event_has_no_end(agent: str, tmp_path: Path) -> None:
    lines = [json.dumps(e) for e in STREAMS[agent]]
    whole = "\n".join(lines) + "\n"
    assert _stop(agent, whole, tmp_path) == "end_turn"
    end_starts = len(whole) - len(lines[-1]) - 1
    for cut in range(end_starts + len(lines[-1])):  # up to the end event's last byte, not kept
        assert _stop(agent, whole[:cut], tmp_path) is None, (agent, whole[cut - 40 : cut])


def test_an_opencode_step_begun_after_an_answer_is_not_an_end(tmp_path: Path) -> None:
    # the CLI died in a step after one that stopped (a compaction, a summary, a follow-up):
    # the turn it was in never ended
    events = [*STREAMS["opencode"], {"type": "step_start", "part": {}}]
    tail = json.dumps({"type": "text", "part": {"text": "half"}})
    stdout = "\n".join(json.dumps(e) for e in events) + "\n" + tail[:20]
    assert _stop("opencode", stdout, tmp_path) is None


def capped_broker(upstream: str, tmp_path: Path) -> Broker:
    """A started broker that forwards each question at most twice."""
    return Broker(
        upstream=upstream,
        api_key="k",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
        max_failures=2,
    ).start()


def test_a_cli_that_retries_a_cut_stream_without_end_is_stopped_at_the_broker(
    tmp_path: Path,
) -> None:
    # OpenCode 1.18.33 retries a cut stream about a hundred times on its own, each call billed
    # its reservation: the broker forwards a request max_failures times, then refuses it
    fake = FakeModelServer(
        parse_script(
            {
                "rules": [
                    {"when": "hi", "replies": ["ok"], "faults": [{"midstream": True, "times": 3}]}
                ]
            }
        )
    ).start()
    broker = capped_broker(fake.url, tmp_path)
    body = {"model": "claude-sonnet-4-6", "max_tokens": 8, "stream": True, "messages": [_HI]}
    try:
        statuses = [
            post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {}).status_code
            for _ in range(4)
        ]
    finally:
        broker.stop()
        fake.stop()
    assert statuses == [200, 200, 400, 400]  # two cut answers, then no more forwarded
    assert len(fake.log()) == 2 and broker.failures == 2


def test_a_requests_tries_are_its_own(tmp_path: Path) -> None:
    # the tries are counted per request (a retry resends the same body): calls that fail,
    # the agent's own through the relay included (it holds the session's key), do not use up
    # the tries of the CLI's next call
    fake = FakeModelServer(
        parse_script(
            {
                "rules": [
                    {"when": "one", "replies": ["ok"], "faults": [{"midstream": True, "times": 9}]},
                    {"when": "two", "replies": ["ok"], "faults": [{"midstream": True, "times": 1}]},
                ]
            }
        )
    ).start()
    broker = capped_broker(fake.url, tmp_path)
    statuses = []
    try:
        for text in ("one", "one", "two", "one", "two", "two", "one-b", "one-b", "one-b"):
            message = {"role": "user", "content": text}
            body = {"model": "claude-sonnet-4-6", "max_tokens": 8, "stream": True}
            data = json.dumps({**body, "messages": [message]}).encode()
            statuses.append(post_as_relay(broker, "/v1/messages", data, {}).status_code)
    finally:
        broker.stop()
        fake.stop()
    # "one" cut twice, then refused; "two" cut once and then answered, twice, whatever "one"
    # did; "one-b", another request, has its own two tries
    assert statuses == [200, 200, 200, 400, 200, 200, 200, 200, 400]
    asked = [json.dumps(r.body) for r in fake.log()]
    assert sum('"one"' in a for a in asked) == 2 and sum('"two"' in a for a in asked) == 3
    assert broker.failures == 5 and broker.answered == 2


def test_hanging_up_on_an_answer_uses_up_no_try_of_its_question(tmp_path: Path) -> None:
    # the agent holds the session's key and can ask the CLI's next question itself (it ran
    # the command whose output that question carries): hanging up on each answer must not
    # count as the provider failing it, nor as a fault of the broker's (found by an outside
    # review: five hang-ups got the CLI's own call refused)
    import socket
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Slow(BaseHTTPRequestHandler):  # an answer that takes a while to stream
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for event in SLOW_ANSWER:
                with contextlib.suppress(OSError):
                    self.wfile.write(event)
                    self.wfile.flush()
                time.sleep(0.3)

        def log_message(self, *args: Any) -> None:
            pass

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    broker = capped_broker(f"http://127.0.0.1:{upstream.server_port}", tmp_path)
    body = {"model": "claude-sonnet-4-6", "max_tokens": 8, "stream": True, "messages": [_HI]}
    data = json.dumps(body).encode()
    head = {"host": "x", "content-type": "application/json", **broker.wire.auth(broker.client_key)}
    head["content-length"] = str(len(data))
    request = "".join(f"{k}: {v}\r\n" for k, v in head.items())
    try:
        for early in (True, False, False, False):  # before the headers, then mid-answer
            with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
                s.sendall(broker.preamble + f"POST /v1/messages HTTP/1.1\r\n{request}\r\n".encode())
                s.sendall(data)
                if not early:
                    s.recv(64)
            time.sleep(1.2 if early else 0.1)
        time.sleep(1.5)  # each hung-up call's thread notices at its next write
        answer = post_as_relay(broker, "/v1/messages", data, {})
    finally:
        broker.stop()
        upstream.shutdown()
    assert answer.status_code == 200 and b"message_stop" in answer.content
    assert (broker.failures, broker.fault, broker.answered) == (0, None, 1)


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


SLOW_ANSWER = [
    _event(
        "message_start",
        {
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-6",
                "stop_reason": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        },
    ),
    _event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    _event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
    _event("content_block_stop", {"index": 0}),
    _event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
    _event("message_stop", {}),
]


class _FreeRateLimited(BaseHTTPRequestHandler):
    """A provider whose free token counting is over its rate limit (the agent can flood it),
    and whose messages endpoint answers."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        limited = "count_tokens" in self.path
        data = b'{"type":"error","error":{"type":"rate_limit_error"}}' if limited else _REPLY
        self.send_response(429 if limited else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_failed_free_calls_use_up_no_try_of_a_question(serve, tmp_path: Path) -> None:  # noqa: F811
    # count_tokens is not billed and its rate limit is the agent's to exceed: copies of the
    # CLI's next question sent there and refused 429 leave the CLI's own call its tries
    broker = capped_broker(serve(_FreeRateLimited), tmp_path)
    data = json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 8, "messages": [_HI]}).encode()
    try:
        copies = [
            post_as_relay(broker, "/v1/messages/count_tokens", data, {}).status_code
            for _ in range(5)
        ]
        own = post_as_relay(broker, "/v1/messages", data, {})
    finally:
        broker.stop()
    assert copies == [429] * 5
    assert own.status_code == 200, own.content
