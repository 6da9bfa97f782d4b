"""skill-optimizer's `mcpServices` and its workbench's `mcp` command (issue 37 item 5), on real
podman: a suite in the shape of skill-optimizer's examples/workbench/mcp (a calculator MCP
server run from the case's mcp/ folder as a hidden service, its `mcpServers` URL at it, a
grader that wants `mcp call calculator.<tool>` bash commands in the trace) imports; the
service starts in the arm's pod from the copied mcp/ folder, the agent's `bin/mcp call`
reaches it, and the grader passes the arm that called the tools and fails the one that only
wrote the answer. (The example's server is node with the MCP SDK from its workbench image;
this one is the same server in Python's standard library, run the same way.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import BASE, CAND, bash, conv, run_eval, skill, write, write_file

SERVER = r"""
import http.server, json, uuid

TOOLS = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
}
SCHEMA = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
          "required": ["a", "b"]}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in msg:  # a notification
            self.send_response(202)
            self.end_headers()
            return
        method, params = msg["method"], msg.get("params", {})
        headers = {}
        if method == "initialize":
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "calculator", "version": "1"}}
            headers["Mcp-Session-Id"] = uuid.uuid4().hex
        elif method == "tools/list":
            result = {"tools": [{"name": n, "description": n, "inputSchema": SCHEMA} for n in TOOLS]}
        else:
            args = params["arguments"]
            value = TOOLS[params["name"]](args["a"], args["b"])
            value = int(value) if value == int(value) else value
            result = {"content": [{"type": "text", "text": str(value)}],
                      "structuredContent": {"result": value}}
        body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


http.server.HTTPServer(("0.0.0.0", 3000), Handler).serve_forever()
"""

# the example's calculator-answer.mjs, in Python: the answer, and a bash `mcp call` per tool
GRADER = r"""
import json, os, re, sys
failures = []
try:
    answer = json.load(open(os.path.join(os.environ["WORK"], "answer.json")))
    if answer.get("result") != 18:
        failures.append(f"result mismatch: {answer.get('result')!r}")
except (OSError, ValueError) as e:
    failures.append(f"answer.json: {e}")
commands = []
for line in open(os.path.join(os.environ["RESULTS"], "trace.jsonl")):
    entry = json.loads(line)
    if entry.get("type") == "tool_call" and entry.get("name") == "bash":
        commands.append(entry.get("arguments", {}).get("command", ""))
for tool in ("add", "multiply", "subtract", "divide"):
    if not any(re.search(rf"\bmcp\s+call\s+calculator\.{tool}\b", c) for c in commands):
        failures.append(f"trace does not contain calculator.{tool} MCP call")
print(json.dumps({"pass": not failures, "score": 0 if failures else 1, "evidence": failures}))
sys.exit(1 if failures else 0)
"""

SUITE = {
    "name": "mcp-calculator-example",
    "references": "./references",
    "timeoutSeconds": 600,
    "mcpServers": {"calculator": {"baseUrl": "http://calculator:3000/mcp"}},
    "mcpServices": {"calculator": {"command": "python3", "args": ["calculator-server.py"]}},
    "cases": [
        {
            "name": "use-calculator-mcp",
            "task": "Compute ((17 + 25) * 3 - 18) / 6 and write answer.json with the result.\n",
            "graders": [
                {
                    "name": "calculator-answer",
                    "command": "python3 $CASE/checks/calculator-answer.py",
                }
            ],
        }
    ],
}

CALLS = (
    "a=$(bin/mcp call calculator.add a=17 b=25) && m=$(bin/mcp call calculator.multiply "
    "a=$a b=3) && s=$(bin/mcp call calculator.subtract a=$m b=18) && d=$(bin/mcp call "
    'calculator.divide a=$s b=6) && printf \'{"result": %s}\' "$d" > answer.json'
)


def imported(tmp_path: Path, capsys) -> Path:
    src = write(
        tmp_path / "wb",
        {
            "suite.yml": json.dumps(SUITE),
            "references/README.md": "Use the calculator MCP server.\n",
            "mcp/calculator-server.py": SERVER,
            "checks/calculator-answer.py": GRADER,
        },
    )
    into = skill(tmp_path, {})
    assert main(["import", "skill-optimizer", str(src), "--into", str(into)]) == 0
    out = capsys.readouterr().out
    assert "mcpServices.calculator — a service in the arm's pod" in out, out
    assert "not started" not in out and "dropped" not in out.split("not mapped")[0], out
    return into


def test_mcp_services_import_as_services_with_the_mcp_command(tmp_path: Path, capsys) -> None:
    into = imported(tmp_path, capsys)
    case = (into / "evals/cases/use-calculator-mcp.yaml").read_text()
    assert '"files": {"/mcp": "use-calculator-mcp/mcp"}' in case, case
    assert "cd /mcp && exec python3 calculator-server.py" in case
    assert '"calculator": {"url": "http://calculator:3000/mcp"}' in case  # mcp_servers
    assert "Run `bin/mcp call <server.tool> key=value`" in case
    fixture = into / "evals/cases/use-calculator-mcp/fixture"
    assert json.loads((fixture / "mcporter.json").read_text())["mcpServers"] == SUITE["mcpServers"]
    assert (fixture / "bin/mcp").stat().st_mode & 0o111
    assert main(["check", str(into)]) == 0


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_the_grader_sees_the_mcp_calls_of_the_arm_that_made_them(
    fake, tmp_path: Path, capsys
) -> None:
    into = imported(tmp_path, capsys)
    fake(
        {
            "conversations": [
                conv(CAND, "Compute", bash(CALLS), {"text": "done"}),
                conv(BASE, "Compute", write_file("answer.json", '{"result": 18}'), {"text": "x"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, into, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # one case: too few units for a verdict (INCONCLUSIVE)
    row = summary["rows"][0]
    cand, base = row["arms"]["candidate"]["checks"], row["arms"]["baseline"]["checks"]
    assert [c["passed"] for c in cand] == [True], (cand, lines)
    assert [c["passed"] for c in base] == [False], base
    assert "calculator.add MCP call" in base[0]["detail"], base
    assert row["outcome"] == "win", row
