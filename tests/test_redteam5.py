"""redteam5: variants of the last round's fixed attacks that hold (each would have been a
finding had it worked); the ones that broke are reproducers under attacks/redteam5/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillbench.config import load_settings
from tests.test_activation_spellings import loaded


@pytest.mark.parametrize("agent", ["builtin", "claude-code"])
@pytest.mark.parametrize(
    "how",
    [
        "source {home}/pdf/SKILL.md",
        ". {home}/pdf/SKILL.md",
        "sh <<EOF\ncat {home}/pdf/SKILL.md\nEOF",
        "python3 -c \"print(open('{home}/pdf/SKILL.md').read())\"",
        "head -50 {home}/pdf/SKILL.md",
        "pushd {home} >/dev/null; cat pdf/SKILL.md",
        "builtin cd {home}/pdf && cat SKILL.md",
        "command cat {home}/pdf/SKILL.md",
        "ln -s {home}/pdf /tmp/x; cat /tmp/x/SKILL.md",
        "a=pd; cat {home}/${{a}}f/SKILL.md",
        "D={home}/pdf; cd $D; cat SKILL.md",
        "(cd {home}/pdf && cat SKILL.md)",
        "cd\t{home}/pdf;cat\tSKILL.md",
        'cat {home}/p""df/SKILL.md',
        "cat < {home}/pdf/SKILL.md",
    ],
)
def test_more_spellings_of_a_read_are_a_load(agent: str, how: str) -> None:
    assert loaded(agent, how) == {"pdf"}
