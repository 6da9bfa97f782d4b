"""`--agent copilot` (docs/agents.md): Copilot CLI's wire at the broker (Chat Completions alone,
the key in a header, a stream without its `[DONE]` is cut), its JSON-lines stream mapped onto
the transcript, the skills it lists checked against the staged ones, and, from a real copilot
sandbox, raw requests to its relay that only its own call gets past."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from skillbench.agents.copilot import _replay, mcp_config, settings
from skillbench.broker.limits import Refused
from skillbench.broker.wire import WIRES, route, upstream_url
from skillbench.evals.mcp import McpServer
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.script import parse_script
from skillbench.results.transcript import TraceWriter
from tests.broker.test_gemini_wire import _Recorder

CHAT = WIRES["openai-chat"]
REAL_KEY = "sk-proj-REALKEY-copilot-wire-5521"
MARK = "copilot-wire-3f7"


def test_the_copilot_wire_passes_chat_completions_alone() -> None:
    endpoint = route(CHAT, "/v1/chat/completions")
    assert str(upstream_url("https://o.example/v1", endpoint)) == (
        "https://o.example/v1/chat/completions"
    )
    assert CHAT.auth("k") == {"authorization": "Bearer k"}


@pytest.mark.parametrize(
    "target",
    [
        "/v1/responses",  # Codex's, not Copilot's
        "/v1/chat/completions?api-key=x",  # a key to echo
        "/v1/chat/completions?key=x",
        "/v1/chat/completions/",
        "/v1/chat/completions/../responses",
        "/v1/chat%2Fcompletions",
        "/v1/chat/completions#x",
        "/chat/completions",
        "/v1/models",
        "/v1/embeddings",
        "/v1/completions",
        "http://evil.example/v1/chat/completions",
        "//evil.example/v1/chat/completions",
        "/v1/messages",
    ],
)
def test_the_copilot_wire_refuses_everything_else(target: str) -> None:
    with pytest.raises(Refused) as refused:
        route(CHAT, target)
    assert refused.value.status == 404


def _chunk(text: str) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})


def test_a_chat_stream_without_its_done_line_is_cut() -> None:
    whole = f"{_chunk('hi')}\r\n\r\ndata: [DONE]\r\n\r\n"
    assert not CHAT.cut(whole)
    assert CHAT.cut(f"{_chunk('hi')}\r\n\r\n")
    # the words inside the model's text are not the stream's end
    assert CHAT.cut(f"{_chunk('data: [DONE]')}\r\n\r\n{_chunk('more')}\r\n\r\n")
    assert not CHAT.cut(json.dumps({"choices": [{"message": {"content": "a JSON body"}}]}))


def _stream(*events: dict[str, Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


SKILLS = {
    "type": "session.skills_loaded",
    "data": {
        "skills": [
            {"name": "greeter", "source": "personal-copilot", "enabled": True},
            {"name": "customize-cloud-agent", "source": "builtin", "enabled": False},
            {"name": "github-pr-media", "source": "builtin", "enabled": True},
        ]
    },
}


def _call(tid: str, name: str, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    data = {"toolCallId": tid, "toolName": name, "arguments": args, **extra}
    return {"type": "tool.execution_start", "data": data}


def _done(tid: str, content: str, success: bool = True, **extra: Any) -> dict[str, Any]:
    data = {"toolCallId": tid, "success": success, "result": {"content": content}, **extra}
    return {"type": "tool.execution_complete", "data": data}


def test_copilots_stream_becomes_the_one_transcript(tmp_path: Path) -> None:
    """As 1.0.102 printed it against the fake server (trimmed to the fields read)."""
    stdout = _stream(
        SKILLS,
        {"type": "assistant.message", "data": {"content": "", "toolRequests": [{}]}},
        _call("c1", "skill", {"skill": "greeter"}),
        _done("c1", 'Skill "greeter" loaded successfully.'),
        _call("c2", "bash", {"command": "sh greet.sh", "description": "greet"}),
        _done(
            "c2",
            "hello\n<shellId: 0 completed with exit code 3>",
            shellExecution={"exitCode": 3},
        ),
        _call("c3", "srv-echo", {"x": 1}, mcpServerName="srv", mcpToolName="echo"),
        _done("c3", "", success=False, error={"message": "no such tool"}),
        {"type": "assistant.message", "data": {"content": "I greeted everyone."}},
        {"type": "result", "exitCode": 0},
    )
    trace = TraceWriter(tmp_path / "t.jsonl")
    stop, listed = _replay(stdout + "not json\n[1]\n", trace)
    assert stop == "end_turn"
    assert listed == ({"greeter"}, {"github-pr-media"})  # (a disabled one is not listed)
    calls = [(e["name"], e["arguments"]) for e in trace.events if e["type"] == "tool_call"]
    assert calls == [
        ("skill", {"skill": "greeter"}),
        ("bash", {"command": "sh greet.sh"}),
        ("mcp__srv__echo", {"x": 1}),
    ]
    results = [
        (e["name"], e["text"], e["is_error"], e["exit_code"])
        for e in trace.events
        if e["type"] == "tool_result"
    ]
    assert results == [
        ("skill", 'Skill "greeter" loaded successfully.', False, None),
        ("bash", "hello\n", True, 3),
        ("mcp__srv__echo", "no such tool", True, None),
    ]
    texts = [e["text"] for e in trace.events if e["type"] == "message"]
    assert texts == ["I greeted everyone."]


@pytest.mark.parametrize(
    "end",
    [
        {"type": "result", "exitCode": 1},
        {"type": "session.error", "data": {"message": "Could not connect"}},
    ],
)
def test_a_failed_copilot_session_ends_in_error(tmp_path: Path, end: dict[str, Any]) -> None:
    stdout = _stream(SKILLS, end, {"type": "result", "exitCode": 0})
    stop, _ = _replay(stdout, TraceWriter(tmp_path / "t.jsonl"))
    assert stop == "error"
    assert _replay(_stream(SKILLS), TraceWriter(tmp_path / "u.jsonl"))[0] is None  # no end


def test_copilots_config_turns_its_own_skills_off_and_holds_the_mcp_servers() -> None:
    assert json.loads(settings(False))["disabledSkills"] == [
        "customize-cloud-agent",
        "github-pr-media",
    ]
    assert "disabledSkills" not in json.loads(settings(True))
    servers = (
        McpServer(name="web", url="http://svc:8000/mcp"),
        McpServer(name="local", command=("python3", "srv.py"), env={"A": "1"}),
    )
    assert json.loads(mcp_config(servers)) == {
        "mcpServers": {
            "web": {"type": "http", "url": "http://svc:8000/mcp", "tools": ["*"]},
            "local": {
                "type": "local",
                "command": "python3",
                "args": ["srv.py"],
                "env": {"A": "1"},
                "tools": ["*"],
            },
        }
    }


# Runs inside a real copilot sandbox as the agent's shell step: raw HTTP/1.1 to the relay, so
# nothing normalises the request target on the way; prints {attack: status}.
ATTACKER = r"""
import glob, json, socket
PORT, MARK = 8381, "copilot-wire-3f7"

def key():  # the session's placeholder: the CLI strips it from its commands' environment
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            for var in open(path, "rb").read().split(b"\0"):
                if var.startswith(b"COPILOT_PROVIDER_API_KEY="):
                    return var.split(b"=", 1)[1].decode()
        except OSError:
            pass
    raise SystemExit("no COPILOT_PROVIDER_API_KEY in any process")

KEY = key()

def body(**extra):
    b = {"model": "gpt-5.1", "messages": [{"role": "user", "content": MARK}], "max_tokens": 16}
    return json.dumps({**b, **extra}).encode()

def send(target, data):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    head = "POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" % target
    head += "authorization: Bearer %s\r\ncontent-length: %d\r\n\r\n" % (KEY, len(data))
    s.sendall(head.encode() + data)
    line = s.makefile("rb").readline()
    s.close()
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 else "eof"

C = "/v1/chat/completions"
out = {
    "allowed": send(C, body()),
    "responses": send("/v1/responses", body()),
    "query_key": send(C + "?api-key=x", body()),
    "dotdot": send(C + "/../responses", body()),
    "encoded": send("/v1/chat%2Fcompletions", body()),
    "absolute": send("http://evil.example" + C, body()),
    "models": send("/v1/models", body()),
    "other_model": send(C, body(model="gpt-5.5-pro")),
}
print("ATTACKS " + json.dumps(out, sort_keys=True))
"""


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_from_a_copilot_sandbox_only_the_wires_own_calls_reach_the_provider(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from http.server import ThreadingHTTPServer

    from tests.helpers import conv, run_eval, skill

    encoded = base64.b64encode(ATTACKER.encode()).decode()
    step = {"tool_calls": [{"bash": {"command": f"echo {encoded} | base64 -d | python3 -"}}]}
    script = {
        "rules": [{"when": MARK, "replies": ["ok"]}],
        "conversations": [conv("(?s)", "Create hello.txt", step, {"text": "done"})],
    }
    fake = FakeModelServer(parse_script(script)).start()
    seen: list[dict[str, Any]] = []
    handler = type("H", (_Recorder,), {"seen": seen, "forward_to": fake.url})
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    upstream.daemon_threads = True
    Thread(target=upstream.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{upstream.server_port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
    folder = skill(
        tmp_path,
        {"evals/cases/hello.yaml": "task: Create hello.txt\nchecks: [{file_exists: hello.txt}]\n"},
        config='agent = "copilot"\n',
    )
    try:
        run_eval(
            capsys,
            folder,
            tmp_path / "run",
            *("--execution-only", "--model", "openai/gpt-5.1", "--case", "hello"),
        )
    finally:
        upstream.shutdown()
        upstream.server_close()
        fake.stop()
    events = [
        json.loads(x)
        for x in (tmp_path / "run/transcripts/hello.baseline.1.jsonl").read_text().splitlines()
    ]
    said = "\n".join(e["text"] for e in events if e["type"] == "tool_result")
    line = next(x for x in said.splitlines() if x.startswith("ATTACKS "))
    attacks = json.loads(line.removeprefix("ATTACKS "))
    assert attacks.pop("allowed") == 200
    assert {name: status in (400, 404) for name, status in attacks.items()} == dict.fromkeys(
        attacks, True
    ), attacks
    # the provider saw only Chat Completions, with the real key as the bearer, never a query
    assert seen and {s["path"] for s in seen} == {"/v1/chat/completions"}
    bearers = {{k.lower(): v for k, v in s["headers"].items()}["authorization"] for s in seen}
    assert bearers == {f"Bearer {REAL_KEY}"}
    assert sum(MARK.encode() in s["body"] for s in seen) == 2  # one per arm
    assert {r.api_key for r in fake.log()} == {REAL_KEY}
    leaked = [
        p
        for p in (tmp_path / "run").rglob("*")
        if p.is_file() and REAL_KEY.encode() in p.read_bytes()
    ]
    assert leaked == []
