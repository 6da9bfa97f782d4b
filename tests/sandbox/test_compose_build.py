"""Harbor compose sidecars with `build:` and compose volumes (issue 37 item 5), on real podman:
a task in harbor-cookbook's shape (its `mcp-tools` and `multi-container` recipes: the sidecar
is built from `environment/<name>/` with `context:`, reached by name, an MCP server in
task.toml points at it) imports, its sidecar is built and started, its oracle passes and
doing nothing fails; a `./shared` bind mount and a named volume become volumes of the arm,
shared by the sidecar, the agent's sandbox (main mounts them) and the verifier."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import skill, write

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("podman_service")]

SERVER = """\
import http.server, os, pathlib

ANSWER = os.environ["ANSWER"]  # from the build's args, through the Dockerfile's ENV
pathlib.Path("/shared/started").write_text("up " + ANSWER + "\\n")


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/answer":
            body = ANSWER
        elif self.path == "/verdict":  # what the verifier wrote into the named volume
            body = pathlib.Path("/results/verdict").read_text().strip()
        else:
            body = "?"
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body.encode())


http.server.HTTPServer(("0.0.0.0", 5000), Handler).serve_forever()
"""

FETCH = "python3 -c \"import urllib.request as u; print(u.urlopen('http://api-server:5000/{}').read().decode())\""

TASK = {
    "ask-api/task.toml": (
        'version = "1.0"\n[verifier]\ntimeout_sec = 120.0\n[agent]\ntimeout_sec = 300.0\n'
        "[environment]\nbuild_timeout_sec = 600.0\ncpus = 1\nmemory_mb = 2048\n"
        'allow_internet = false\n\n[[environment.mcp_servers]]\nname = "api-server"\n'
        'transport = "streamable-http"\nurl = "http://api-server:5000/mcp"\n'
    ),
    "ask-api/instruction.md": (
        "Ask the API at http://api-server:5000/answer and write what it says to /app/code.txt.\n"
    ),
    "ask-api/environment/Dockerfile": "FROM skillbench-sandbox\nWORKDIR /app\n",
    "ask-api/environment/docker-compose.yaml": """\
        services:
          main:
            depends_on:
              api-server:
                condition: service_healthy
            volumes:
              - ./shared:/shared
              - results:/results
          api-server:
            build:
              context: ./api-server
              dockerfile: Containerfile.api
              args:
                ANSWER: "7"
            expose:
              - "5000"
            volumes:
              - ./shared:/shared
              - results:/results
            healthcheck:
              test: ["CMD", "python3", "-c", "import socket; s=socket.create_connection(('localhost',5000),timeout=2); s.close()"]
              interval: 1s
              timeout: 5s
              retries: 20
        volumes:
          results:
        """,
    "ask-api/environment/api-server/Containerfile.api": (
        "FROM skillbench-sandbox\nARG ANSWER\nENV ANSWER=$ANSWER\nUSER root\n"
        'COPY server.py /srv/server.py\nCMD ["python3", "/srv/server.py"]\n'
    ),
    "ask-api/environment/api-server/server.py": SERVER,
    "ask-api/tests/test.sh": (
        "#!/bin/bash\n"
        f"want=$({FETCH.format('answer')})\n"
        # the verifier writes into the named volume, and the sidecar reads it back
        'echo "$want" > /results/verdict\n'
        f"back=$({FETCH.format('verdict')})\n"
        'if [ "$(cat /app/code.txt)" = "$want" ] && [ "$back" = "$want" ] '
        '&& grep -q "^up $want" /shared/started && [ "$(cat /app/seen.txt)" = "up $want" ]; '
        "then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
    ),
    # the agent's phase sees the sidecar and the volume main mounts
    "ask-api/solution/solve.sh": (
        f"#!/bin/bash\n{FETCH.format('answer')} > /app/code.txt\ncp /shared/started /app/seen.txt\n"
    ),
}


def test_a_compose_sidecar_with_build_is_built_started_and_shares_its_volumes(
    tmp_path: Path, capsys
) -> None:
    into = skill(tmp_path, {})
    src = write(tmp_path / "harbor", TASK)
    assert main(["import", "harbor", str(src / "ask-api"), "--into", str(into)]) == 0
    said = capsys.readouterr().out
    assert not [line for line in said.splitlines() if "api-server" in line and "dropped" in line]
    assert "docker-compose.yaml:10: services.api-server.build — built before the run" in said
    assert "an MCP server for the agent CLI" in said  # the task.toml's server, at the sidecar
    case = (into / "evals/cases/ask-api.yaml").read_text()
    assert '"build": {"context": "ask-api/environment/api-server"' in case
    assert '"volumes": {"shared": "/shared", "results": "/results"}' in case
    assert main(["check", str(into)]) == 0
    capsys.readouterr()
    assert main(["eval", str(into), "--oracle", "--model", "scripted/demo"]) == 0
    report = capsys.readouterr().out
    assert "oracle PASS: ask-api" in report, report
