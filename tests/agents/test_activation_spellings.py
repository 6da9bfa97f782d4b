"""A skill read is a load however the agent spells it, and naming one is not (redteam4 AH1,
AH1b; docs/agents.md "Activation"): a non-zero exit after the read, a glob, `cd` then a
relative name, a variable; an `echo` of the path or a comment is no load."""

from __future__ import annotations

import pytest

from skillbench.agents import AGENTS, make_agent
from skillbench.results.transcript import expand_loaded
from tests.agents.test_activation_reads import HOME, SHELL

STAGED = ["pdf", "xlsx"]


def _shell(name: str, arg: str, command: str, error: bool) -> list[dict]:
    return [
        {"type": "tool_call", "id": "c1", "name": name, "arguments": {arg: command}},
        {"type": "tool_result", "id": "c1", "text": "---\nname: pdf\n...", "is_error": error},
    ]


def loaded(agent: str, command: str, error: bool = False) -> set[str]:
    shell, arg = SHELL[agent]
    events = _shell(shell, arg, command.format(home=HOME[agent]), error)
    return expand_loaded(make_agent(agent).invoked(events), STAGED)


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.parametrize(
    ("how", "error"),
    [
        ("cat {home}/pdf/SKILL.md; false", True),
        ("cat {home}/p*/SKILL.md", False),
        ("cd {home}/pdf && cat SKILL.md", False),
        ("cd {home} && cat pdf/SKILL.md", False),
        ("d={home}/pdf; cat $d/SKILL.md", False),
        ("export D={home}; cat ${{D}}/pdf/SKILL.md", False),
        ("echo '#'; cat {home}/pdf/SKILL.md", False),
        ('echo "$(cat {home}/pdf/SKILL.md)"', False),
    ],
    ids=["exit-1", "glob", "cd", "cd-home", "variable", "export", "quoted-hash", "substitution"],
)
def test_a_read_the_agent_spelt_to_hide_is_still_a_load(agent: str, how: str, error: bool):
    assert loaded(agent, how, error) == {"pdf"}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_glob_over_every_skill_loads_every_staged_one(agent: str) -> None:
    assert loaded(agent, "cat {home}/*/SKILL.md") == set(STAGED)


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.parametrize(
    "how",
    [
        "echo see {home}/pdf/SKILL.md  # later",
        "ls /work  # {home}/pdf/SKILL.md",
        "printf '%s\\n' {home}/pdf/SKILL.md",
        "test -f {home}/pdf/SKILL.md && echo yes",
    ],
)
def test_naming_the_skill_without_reading_it_is_no_load(agent: str, how: str) -> None:
    assert loaded(agent, how) == set()
