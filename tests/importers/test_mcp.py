"""MCP servers as services (issue 23 part 2, docs/formats.md): Harbor's `[[environment.mcp_servers]]`
and skill-optimizer's `mcpServers`/`mcpServices` import onto a case's `mcp_servers:` where they
can (a server that is one of the case's services, or a stdio command), and every other one is
listed with its reason; `check` refuses a server the sandbox could never reach; and a Harbor
task whose MCP server runs in its compose file is used by the real Claude Code CLI, which the
case's `mcp_servers:` is given to through `--mcp-config`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from tests.agents.test_agents import REAL_KEY
from tests.helpers import skill, write

# A streamable-HTTP MCP server in the standard library: JSON answers, one tool `answer`.
SERVER = """\
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOL = {"name": "answer", "description": "The answer to the question.",
        "inputSchema": {"type": "object", "properties": {}}}


class Mcp(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # no server-sent stream: every answer is a JSON body
        self._send(405, b"", "text/plain")

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if "id" not in msg:  # a notification
            return self._send(202, b"", "text/plain")
        method = msg.get("method")
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"],
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "calc", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "the answer is 42"}]}
        else:
            result = {}
        body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        self._send(200, body, "application/json")

    def _send(self, code, body, kind):
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("0.0.0.0", 8000), Mcp).serve_forever()
"""
ASK = (  # a tools/call of `answer`, printed: what solve.sh and test.sh ask the server
    "python3 -c \"import json, urllib.request as u; r = u.Request('http://calc:8000/mcp', "
    "json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'tools/call', 'params': {'name': "
    "'answer', 'arguments': {}}}).encode(), {'Content-Type': 'application/json', 'Accept': "
    "'application/json, text/event-stream'}); print(json.load(u.urlopen(r))['result']"
    "['content'][0]['text'].split()[-1])\""
)
TASK = {
    "calc/task.toml": (
        'version = "1.0"\n\n[agent]\ntimeout_sec = 300.0\n\n[environment]\nallow_internet = false\n\n'
        '[[environment.mcp_servers]]\nname = "calc"\ntransport = "streamable-http"\n'
        'url = "http://calc:8000/mcp"\n\n'
        '[[environment.mcp_servers]]\nname = "notes"\ntransport = "stdio"\n'
        'command = "python3"\nargs = ["/opt/notes.py"]\n\n'
        '[[environment.mcp_servers]]\nname = "events"\ntransport = "sse"\n'
        'url = "http://calc:8001/sse"\n\n'
        '[[environment.mcp_servers]]\nname = "docs"\ntransport = "streamable-http"\n'
        'url = "https://mcp.example.com/mcp"\n'
    ),
    "calc/instruction.md": "Ask the calc MCP server's `answer` tool and write its number to answer.txt.\n",
    "calc/environment/Dockerfile": "FROM skillbench-sandbox\nCOPY calc.py /opt/calc.py\n",
    "calc/environment/calc.py": SERVER,
    "calc/environment/docker-compose.yaml": """\
        services:
          main:
            build:
              context: ${CONTEXT_DIR}
            image: ${MAIN_IMAGE_NAME}
            depends_on:
              calc:
                condition: service_healthy
          calc:
            image: ${MAIN_IMAGE_NAME}
            command: ["python3", "/opt/calc.py"]
            healthcheck:
              test: ["CMD", "python3", "-c", "import socket; socket.create_connection(('localhost', 8000))"]
        """,
    "calc/tests/test.sh": (
        "#!/bin/bash\n"
        f'if [ "$(cat answer.txt)" = "$({ASK})" ]; then echo 1; else echo 0; fi '
        "> /logs/verifier/reward.txt\n"
    ),
    "calc/solution/solve.sh": f"#!/bin/bash\n{ASK} > answer.txt\n",
}


def _one_server() -> dict[str, str]:
    """TASK with its calc server alone (the others are there to be listed by import)."""
    toml = TASK["calc/task.toml"].split('\n\n[[environment.mcp_servers]]\nname = "notes"')[0]
    return {**TASK, "calc/task.toml": toml + "\n"}


def test_mcp_servers_import_where_they_can_and_the_rest_are_listed(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    assert (
        main(["import", "harbor", str(write(tmp_path / "h", TASK) / "calc"), "--into", str(into)])
        == 0
    )
    said = capsys.readouterr().out
    for line in (
        'calc: environment.mcp_servers[0] (calc) — an MCP server for the agent CLI: {"url": "http://calc:8000/mcp"}',
        'calc: environment.mcp_servers[1] (notes) — an MCP server for the agent CLI: {"command": ["python3", "/opt/notes.py"]}',
        "calc: environment.mcp_servers[2] (events) — transport 'sse': only streamable HTTP",
        "calc: environment.mcp_servers[3] (docs) — dropped: https://mcp.example.com/mcp is not one of the case's services",
    ):
        assert line in said, said
    case = (into / "evals/cases/calc.yaml").read_text()
    assert 'mcp_servers: {"calc": {"url": "http://calc:8000/mcp"}, "notes"' in case
    assert main(["check", str(into)]) == 0, capsys.readouterr().out

    suite = {
        "suite.yml": (
            "name: s\nmcpServers:\n  calculator: {baseUrl: 'http://calculator:3000/mcp'}\n"
            "  context7:\n    baseUrl: https://mcp.context7.com/mcp\n"
            "    headers: {Authorization: 'Bearer ${KEY}'}\n"
            "mcpServices:\n  calculator: {command: node, args: [calculator.mjs], port: 3000}\n"
            "cases:\n  - name: add\n    task: Add 2 and 3 with the calculator.\n"
            "    mcpServers:\n      local: {command: python3, args: [/work/tools.py]}\n"
            "    graders: [{name: g, command: 'test -s out.txt'}]\n"
        )
    }
    other = skill(tmp_path / "o", {})
    assert (
        main(
            ["import", "skill-optimizer", str(write(tmp_path / "so", suite)), "--into", str(other)]
        )
        == 0
    )
    said = capsys.readouterr().out
    for line in (
        # (the suite has no mcp/ folder: tests/importers/test_skillopt_mcp.py runs one)
        "case add: mcpServices.calculator — dropped: the case has no mcp/ folder to run it from",
        "case add: mcpServers.calculator — dropped: http://calculator:3000/mcp is not one of",
        "case add: mcpServers.context7 — dropped: it sends headers",
        'case add: mcpServers.local — an MCP server for the agent CLI: {"command": ["python3", "/work/tools.py"]}',
    ):
        assert line in said, said
    assert (
        'mcp_servers: {"local": {"command": ["python3", "/work/tools.py"]}}'
        in (other / "evals/cases/add.yaml").read_text()
    )


def test_check_refuses_an_mcp_server_the_sandbox_cannot_reach(tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/c.yaml": (
                "task: t\nnetwork: {agent: ['api.example.com:443']}\nmcp_servers:\n"
                "  far: {url: 'https://mcp.example.com/mcp'}\n"
                "  listed: {url: 'https://api.example.com/mcp'}\n"
                "checks: [{file_exists: x}]\n"
            )
        },
    )
    assert main(["check", str(folder)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"{folder}/evals/cases/c.yaml:4: error: MCP server 'far': mcp.example.com:443 is neither "
        "one of the case's services nor listed in the agent phase's `network`, and the sandbox "
        "reaches nothing else; run the server as a service or list the host"
    ), out
    assert out[-1] == "checked 1 skill: 1 error, 0 warnings"


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_claude_code_uses_the_mcp_server_of_an_imported_harbor_task(
    fake, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    into = skill(tmp_path, {}, config='agent = "claude-code"\n')
    src = write(tmp_path / "h", _one_server()) / "calc"
    assert main(["import", "harbor", str(src), "--into", str(into)]) == 0
    capsys.readouterr()
    assert main(["eval", str(into), "--oracle", "--model", "scripted/demo"]) == 0
    assert "oracle PASS: calc" in capsys.readouterr().out

    ask = {"tool_calls": [{"mcp__calc__answer": {}}]}
    write_answer = {"tool_calls": [{"Bash": {"command": "echo 42 > answer.txt"}}]}
    guess = {"tool_calls": [{"Bash": {"command": "echo 41 > answer.txt"}}]}
    fake(
        {
            "conversations": [
                {"when": "(?s)greeter.*calc MCP", "steps": [ask, write_answer, {"text": "done"}]},
                {"when": "(?s)calc MCP", "steps": [guess, {"text": "done"}]},
            ]
        }
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_KEY)
    run = tmp_path / "run"
    flags = ["--quiet", "--seed", "7", "--no-gen", "--execution-only"]
    code = main(
        ["eval", str(into), "--model", "anthropic/claude-sonnet-4-6", "--out", str(run), *flags]
    )
    summary = json.loads((run / "summary.json").read_text())
    (row,) = summary["rows"]
    assert row["outcome"] == "win", (code, json.dumps(row))
    events = [json.loads(x) for x in (run / "transcripts/calc.candidate.1.jsonl").open()]
    (result,) = [
        e for e in events if e["type"] == "tool_result" and e["name"] == "mcp__calc__answer"
    ]
    assert result["text"] == "the answer is 42" and not result["is_error"], result


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_codex_calls_the_mcp_server_of_an_imported_harbor_task(
    fake, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Codex 0.169.0 offers a server's tools to the model as a namespace (mcp__calc, holding
    # `answer`); the fake server answers a scripted `mcp__calc__answer` as a call into it
    into = skill(tmp_path, {}, config='agent = "codex"\n')
    src = write(tmp_path / "h", _one_server()) / "calc"
    assert main(["import", "harbor", str(src), "--into", str(into)]) == 0
    capsys.readouterr()
    ask = {"tool_calls": [{"mcp__calc__answer": {}}]}
    write_answer = {"tool_calls": [{"exec_command": {"cmd": "echo 42 > answer.txt"}}]}
    fake(
        {
            "conversations": [
                {"when": "(?s)calc MCP", "steps": [ask, write_answer, {"text": "done"}]}
            ]
        }
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-a-real-looking-key-0000")
    run = tmp_path / "run"
    flags = ["--quiet", "--seed", "7", "--no-gen", "--execution-only"]
    main(["eval", str(into), "--model", "openai/gpt-5.4", "--out", str(run), *flags])
    summary = json.loads((run / "summary.json").read_text())
    (row,) = summary["rows"]
    assert all(a["passed"] for a in row["arms"].values()), json.dumps(row)
    events = [json.loads(x) for x in (run / "transcripts/calc.candidate.1.jsonl").open()]
    calls = [(e["type"], e["name"]) for e in events if e["type"] in ("tool_call", "tool_result")]
    assert calls[:2] == [("tool_call", "mcp__calc__answer"), ("tool_result", "mcp__calc__answer")]
    (result,) = [
        e for e in events if e["type"] == "tool_result" and e["name"] == "mcp__calc__answer"
    ]
    assert result["text"] == "the answer is 42" and not result["is_error"], result
