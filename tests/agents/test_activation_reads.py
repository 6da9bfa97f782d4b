"""Issue 38 ACT1: a skill is loaded when the agent read its SKILL.md or ran its scripts, by any
tool, for every agent: not only through the agent's own skill tool. A candidate that `cat`s the
SKILL.md and runs the skill's script is recorded as having loaded it."""

from __future__ import annotations

from typing import Any

import pytest

from skillbench.agents import AGENTS, make_agent
from skillbench.results.transcript import expand_loaded

HOME = {
    "builtin": "/skills",
    "claude-code": "/home/agent/.claude/skills",
    "codex": "/skills",
    "opencode": "/home/agent/.config/opencode/skills",
    "gemini-cli": "/home/agent/.gemini/skills",
    "copilot": "/home/agent/.copilot/skills",
}
# each agent's own names for a shell and a file read
SHELL = {
    "builtin": ("bash", "command"),
    "claude-code": ("Bash", "command"),
    "codex": ("bash", "command"),
    "opencode": ("bash", "command"),
    "gemini-cli": ("bash", "command"),  # its run_shell_command, in the transcript
    "copilot": ("bash", "command"),
}
READ = {
    "builtin": ("read", "path"),
    "claude-code": ("Read", "file_path"),
    "codex": ("read", "path"),
    "opencode": ("read", "filePath"),
    "gemini-cli": ("read_file", "file_path"),
    "copilot": ("view", "path"),
}


def call(name: str, **arguments: Any) -> list[dict[str, Any]]:
    return [
        {"type": "tool_call", "id": "c1", "name": name, "arguments": arguments},
        {"type": "tool_result", "id": "c1", "text": "ok", "is_error": False},
    ]


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.parametrize(
    "how",
    [
        "cat {home}/pdf/SKILL.md",
        "sed -n 1,80p {home}/pdf/SKILL.md",
        "head -50 '{home}/pdf/SKILL.md'",
        "python3 -c \"print(open('{home}/pdf/SKILL.md').read())\"",
        "python3 {home}/pdf/scripts/fill.py form.pdf",
        "bash {home}/pdf/scripts/run.sh",
    ],
)
def test_a_shell_read_or_run_of_the_skill_is_a_load(agent: str, how: str) -> None:
    shell, arg = SHELL[agent]
    events = call(shell, **{arg: how.format(home=HOME[agent])})
    assert "pdf" in make_agent(agent).invoked(events)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_file_read_of_the_skill_md_is_a_load(agent: str) -> None:
    tool, arg = READ[agent]
    assert "pdf" in make_agent(agent).invoked(call(tool, **{arg: f"{HOME[agent]}/pdf/SKILL.md"}))


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_failed_read_or_an_unrelated_command_is_no_load(agent: str) -> None:
    shell, arg = SHELL[agent]
    failed = call(shell, **{arg: f"cat {HOME[agent]}/pdf/SKILL.md"})
    failed[1]["is_error"] = True  # (an errored shell call may have read it: redteam4 AH1)
    assert expand_loaded(make_agent(agent).invoked(failed), ["pdf"]) == {"pdf"}
    assert expand_loaded(make_agent(agent).invoked(failed), []) == set()  # not staged: no load
    assert make_agent(agent).invoked(call(shell, **{arg: "ls /work && cat notes.md"})) == set()
