"""A model call the agent makes itself, through its CLI's relay with the key its shell holds, is
no end of the session (issue 38, docs/trust.md): a losing candidate that makes calls which
fail while its CLI ends cleanly must not turn its loss into an unscored row, nor stop the run.
Such calls: a request over the organisation's rate limit (providers answer it 429 at once,
unbilled), and one whose worst case no budget covers (the broker refuses it for budget).
Real podman, the real CLIs, the fake model server."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from skillbench.agents import claude_code, codex, opencode
from skillbench.models.fake_server import FakeModelServer
from tests.agents.test_agents import MODEL, bash, greeter
from tests.helpers import conv, run_eval

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

MARK = "overlimit-7e1"

# `threads` threads, each making calls with the session's key for `seconds` (the CLI ends
# meanwhile), each asking for up to `most` tokens, each call a request of its own (a broker
# that caps a request's tries forwards each one)
CALLS = """
import itertools, json, os, socket, threading, time
key, port, openai = os.environ[%r].encode(), %d, %r
threads, seconds, most = %d, %d, %d
if openai:
    path = b"/v1/responses"
    body = {"model": "gpt-5.1", "max_output_tokens": most,
            "input": [{"role": "user", "content": "%s"}]}
    auth = b"authorization: Bearer " + key
else:
    path = b"/v1/messages"
    body = {"model": "claude-sonnet-4-6", "max_tokens": most,
            "messages": [{"role": "user", "content": "%s"}]}
    auth = b"anthropic-version: 2023-06-01\\r\\nx-api-key: " + key
n = itertools.count()

def request():
    data = json.dumps({**body, "metadata": {"user_id": str(next(n))}}).encode()
    return (b"POST " + path + b" HTTP/1.1\\r\\nhost: x\\r\\ncontent-type: application/json\\r\\n"
            + auth + b"\\r\\ncontent-length: %%d\\r\\n\\r\\n" %% len(data) + data)

def call():
    end = time.time() + seconds
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(request())
                while s.recv(65536):
                    pass
        except OSError:
            pass

for _ in range(threads):
    threading.Thread(target=call).start()
"""


def caller(agent: str, *, threads: int, seconds: int, most: int) -> str:
    """The shell step that leaves CALLS running behind the agent's CLI."""
    source = CALLS % (*SETUP[agent], threads, seconds, most, MARK, MARK)
    script = base64.b64encode(source.encode()).decode()
    return (
        f"echo {script} | base64 -d > /tmp/c.py && "
        "(setsid nohup python3 /tmp/c.py > /dev/null 2>&1 &) && sleep 1 && echo left"
    )


def losing_candidate(
    agent: str, fake, tmp_path: Path, leave_behind: str, rule: dict[str, Any], limits: str = ""
) -> tuple[Path, FakeModelServer]:
    """The greeter skill with one case the baseline passes and the candidate loses (it
    writes no hello.txt) after running `leave_behind`; the fake server answers the left-behind
    calls by `rule`."""
    folder = greeter(tmp_path, agent)
    (folder / "evals/cases/hello.yaml").write_text(
        f"task: Create hello.txt with a greeting\n{limits}checks:\n  - file_exists: hello.txt\n"
    )
    done = {"text": "ok"}
    server = fake(
        {
            "rules": [rule],
            "conversations": [
                conv("(?s)greeter", "Create hello.txt", bash(agent, leave_behind), done),
                conv("(?s)", "Create hello.txt", bash(agent, "echo hi > hello.txt"), done),
            ],
        }
    )
    return folder, server


def sessions_by_arm(run: Path) -> dict[str, dict[str, Any]]:
    journal = [json.loads(x) for x in (run / "journal.jsonl").read_text().splitlines()]
    return {j["arm"]: j for j in journal if j["type"] == "session"}


SETUP = {
    "claude-code": ("ANTHROPIC_API_KEY", claude_code.RELAY_PORT, ""),
    "codex": ("OPENAI_API_KEY", codex.RELAY_PORT, "yes"),
    "opencode": ("ANTHROPIC_API_KEY", opencode.RELAY_PORT, ""),
}


AGENTS = ["claude-code", "codex", "opencode"]


@pytest.mark.parametrize("agent", AGENTS)
def test_calls_the_agent_makes_as_its_cli_ends_leave_the_row_scored(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    over_limit = {"status": 429, "message": "over the organization's rate limit", "times": 10**6}
    folder, server = losing_candidate(
        agent,
        fake,
        tmp_path,
        caller(agent, threads=4, seconds=10, most=64),
        {"when": MARK, "replies": ["never"], "faults": [over_limit]},
        "max_turns: 1000\n",
    )
    _, lines, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", MODEL[agent]
    )
    refused = [r for r in server.log() if MARK in json.dumps(r.body)]
    assert len(refused) >= 10 and {r.status for r in refused} == {429}  # the agent's calls
    sessions = sessions_by_arm(tmp_path / "run")
    assert sessions["candidate"]["outcome"] == "fail", sessions["candidate"]
    assert summary["scored_rows"] == 1, lines
    assert [(r["outcome"], r["decided_by"]) for r in summary["rows"]] == [("loss", "checks")]


@pytest.mark.parametrize("then_kill", [False, True], ids=["cli-ends", "cli-killed"])
@pytest.mark.parametrize("agent", AGENTS)
def test_a_call_of_the_agents_no_budget_covers_neither_unscores_its_loss_nor_stops_the_run(
    agent: str, then_kill: bool, fake, tmp_path: Path, capsys
) -> None:
    # asks for a billion tokens: its worst case (~$15,000) is past any --max-cost. Killed
    # after it, the CLI has no end of its own and the broker did refuse a call for budget,
    # but the agent's, and a signal skillbench never sends ended the CLI (found by an outside
    # review: "refused for budget" made the loss not run, and stopped the whole run)
    from tests.security.test_redteam8_sandbox import _kill_the_cli

    leave_behind = caller(agent, threads=1, seconds=3, most=10**9)
    if then_kill:
        leave_behind += " && sleep 2; " + _kill_the_cli(agent)
    folder, _ = losing_candidate(
        agent, fake, tmp_path, leave_behind, {"when": MARK, "replies": ["never"]}
    )
    _, _, summary = run_eval(
        capsys,
        folder,
        tmp_path / "run",
        *("--execution-only", "--model", MODEL[agent], "--parallel", "1", "--max-cost", "20"),
    )
    exchanges = (tmp_path / "run/exchanges/hello.candidate.1.jsonl").read_text()
    assert "--max-cost cannot cover this call" in exchanges  # the agent's call was refused
    candidate = sessions_by_arm(tmp_path / "run")["candidate"]
    assert candidate["stop_reason"] != "budget", candidate
    if then_kill:
        assert candidate["stop_reason"] == "ended", candidate
    assert candidate["outcome"] == "fail", candidate
    assert not summary.get("stopped"), summary.get("stopped")
    assert [(r["outcome"], r["decided_by"]) for r in summary["rows"]] == [("loss", "checks")]
