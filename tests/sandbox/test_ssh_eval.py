"""End-to-end evals against the podman service reached only over ssh:// (issue 28): a
claude-code arm (the real CLI from npm, against the fake model server through skillbench's
broker) whose image is loaded into that service on first use, with the same results the
local service gives (tests/agents/test_agents.py); and a case with its own image, built here."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.sandbox.podman.hostcli import host_env
from tests.agents.test_agents import KEY_VAR, MODEL, REAL_KEY, greeter, greeter_script, rows
from tests.helpers import conv, skill
from tests.helpers import run_eval as run
from tests.ssh_service import SshPodman

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e]


def test_a_claude_code_eval_runs_on_the_ssh_only_service(
    over_ssh: SshPodman, fake, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = "claude-code"
    folder = greeter(tmp_path, agent)
    server = fake(greeter_script(agent))
    monkeypatch.setenv(KEY_VAR[agent], REAL_KEY)
    # to the microsecond: whole seconds took in the containers a test before made in its
    # last second (same process, same owner label)
    started = f"{time.time():.6f}"
    code, lines, summary = run(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", MODEL[agent]
    )
    assert code == 3, lines
    assert summary["agent"] == agent and summary["verdict"] == "INCONCLUSIVE"
    assert rows(summary) == [
        (
            "hello",
            "win",
            "checks",
            (
                ("baseline", (True, False, False, True)),
                ("candidate", (True, True, True, True)),
            ),
        )
    ]
    assert {r.api_key for r in server.log()} == {REAL_KEY}
    with over_ssh.direct() as direct:  # the arms ran there, from images loaded there
        assert any("skillbench-claude-code" in t for i in direct.images.list() for t in i.tags)
        assert direct.containers.list(all=True) == []  # and were removed there
    remote = ["podman", "--url", f"unix://{over_ssh.sock}"]  # (the test's own way in)
    assert len(_created(remote, started)) >= 2  # both arms' sandboxes were made there
    assert _created(["podman"], started) == []  # and none of ours by the host's podman


def _created(podman: list[str], since: str) -> list[str]:
    """The containers this process's skillbench created since then, per podman's events."""
    mine = f"label=skillbench.owner={socket.gethostname()}:{os.getpid()}"
    filters = ("--filter", "event=create", "--filter", mine, "--format", "{{.ID}}")
    done = subprocess.run(
        [*podman, "events", "--stream=false", "--since", since, *filters],
        capture_output=True,
        text=True,
        env=host_env(),
        check=True,
    )
    return done.stdout.split()


def test_a_case_image_built_here_is_loaded_into_the_ssh_service_on_first_use(
    over_ssh: SshPodman, fake, tmp_path: Path, capfd
) -> None:
    """A case's own image is built by the host's podman, then loaded into the service
    before its first sandbox there; the agent and the checker both see its file."""
    folder = skill(
        tmp_path,
        {
            "evals/cases/tool.yaml": (
                "task: Use the tool\ncontainerfile: tool/Containerfile\n"
                'checks:\n  - command_succeeds: test "$(cat /opt/marker)" = built-ssh\n'
                "  - transcript_mentions: marker says built\n"
            ),
            "evals/cases/tool/Containerfile": (
                f"FROM skillbench-sandbox\nRUN echo built-ssh > /opt/marker # {os.urandom(4).hex()}\n"
            ),
        },
    )
    fake(
        {
            "conversations": [
                conv(
                    "(?s)",
                    "Use the tool",
                    {"tool_calls": [{"bash": {"command": "cat /opt/marker"}}]},
                    {"text": "the marker says built"},
                )
            ]
        }
    )
    code = main(
        [
            *("eval", str(folder), "--model", "anthropic/claude-sonnet-4-6", "--no-gen"),
            *("--execution-only", "--quiet", "--out", str(tmp_path / "run")),
        ]
    )
    err = capfd.readouterr().err.splitlines()
    assert code == 3, err
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    checks = summary["rows"][0]["arms"]["baseline"]["checks"]
    assert [c["passed"] for c in checks] == [True, True]
    loads = [
        line for line in err if line.startswith("skillbench: loading localhost/skillbench-case:")
    ]
    assert len(loads) == 1, err  # once, though both arms and their checkers run in it
    with over_ssh.direct() as direct:
        assert direct.images.exists(loads[0].split()[2])
