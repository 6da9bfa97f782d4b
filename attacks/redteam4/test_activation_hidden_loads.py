"""AH1 (BROKEN, medium): a candidate reads its skill and is recorded as "not loaded", so it
wins `expect_activation: false` rows it should lose (ACT1 reopened by spelling).

transcript.loaded_skills counts a tool call as a load only when (a) its result is not an
error and (b) a string in its arguments matches `skills/<name>/<char>`. Both are the agent's
to steer:
- `cat /skills/pdf/SKILL.md; false`: the content was read, but the shell exits 1, every
  agent marks the result is_error (builtin tools.py: is_error = not result.ok; codex and
  opencode: exit code != 0; Claude Code's Bash likewise) and the load is dropped;
- a glob (`cat /skills/*/SKILL.md`), `cd /skills/pdf && cat SKILL.md`, a trailing slash then
  a space, or a variable (`d=/skills/pdf; cat $d/SKILL.md`) never match the pattern.
The module doc names run-time spellings as a known gap; the is_error rule is not named, and
makes even the plain `cat` of ACT1 invisible with two extra characters.

Expected: "pdf" in invoked(events) for each. Observed: set() for each.
Fix: count a call that names the skill's folder at all (`skills/<name>` followed by anything
or end), ignore is_error for shell calls (a non-zero exit after a read is still a read), and
for the rest record reads from the sandbox side (e.g. atime/fanotify or an LD_PRELOAD-free
audit of opens under the skills home) rather than from the agent's words.
"""

from __future__ import annotations

import pytest

from skillbench.agents import AGENTS, make_agent
from tests.test_activation_reads import HOME, SHELL


def _shell(name: str, arg: str, command: str, error: bool) -> list[dict]:
    return [
        {"type": "tool_call", "id": "c1", "name": name, "arguments": {arg: command}},
        {"type": "tool_result", "id": "c1", "text": "---\nname: pdf\n...", "is_error": error},
    ]


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.parametrize(
    ("how", "error"),
    [
        ("cat {home}/pdf/SKILL.md; false", True),
        ("cat {home}/*/SKILL.md", False),
        ("cd {home}/pdf && cat SKILL.md", False),
        ("d={home}/pdf; cat $d/SKILL.md", False),
    ],
    ids=["exit-1-after-read", "glob", "cd-then-relative", "variable"],
)
def test_a_read_the_agent_spelt_to_hide_is_still_a_load(agent: str, how: str, error: bool):
    shell, arg = SHELL[agent]
    events = _shell(shell, arg, how.format(home=HOME[agent]), error)
    assert "pdf" in make_agent(agent).invoked(events)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_naming_the_skill_without_reading_it_is_no_load(agent: str) -> None:
    """AH1b (PARTIAL, low): the reverse: a call that only NAMES a skill file (an echo, a
    comment) counts as a load, so a skill that never loads can fake its activation rate and
    hide the "never loaded: the verdict measures its absence" diagnostic."""
    shell, arg = SHELL[agent]
    events = _shell(shell, arg, f"echo see {HOME[agent]}/pdf/SKILL.md  # later", False)
    assert "pdf" not in make_agent(agent).invoked(events)
