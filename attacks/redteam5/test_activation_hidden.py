"""RT5-ACT (redteam5): a SKILL.md read the agent spelt with ordinary shell still hides from
activation (transcript._command_reads), so a candidate that reads the skill on an
`expect_activation: false` case is not the arm that loaded it (engine/activation.misfire).

Run: PYTHONPATH=. .venv/bin/pytest attacks/redteam5/test_activation_hidden.py
Expected: each is {"pdf"}. Observed: set() (or {"xlsx"} for the `..` ones: a false load of
another skill while the one read hides).
"""

from __future__ import annotations

import pytest

from tests.test_activation_spellings import loaded


@pytest.mark.parametrize("agent", ["builtin", "claude-code"])
@pytest.mark.parametrize(
    "how",
    [
        "cat {home}/xlsx/../pdf/SKILL.md",  # observed {'xlsx'}
        "cd {home}/xlsx && cat ../pdf/SKILL.md",  # observed {'xlsx'}
        "cat {home}/{{pdf,none}}/SKILL.md",  # brace expansion
        "cat {home}/$'pdf'/SKILL.md",  # ANSI-C quoting
        "cat /sk*lls/pdf/SKILL.md",  # a glob in the skills home
        "echo {home}/pdf/SKILL.md | xargs cat",
        "echo 'cat {home}/pdf/SKILL.md' | sh",
        "cat $(echo {home}/pdf/SKILL.md)",
        "cat $(printf {home}/pdf)/SKILL.md",
        "cd -- {home}/pdf && cat SKILL.md",
        "cd -P {home}/pdf && cat SKILL.md",
        "cat {home}/${{X:-pdf}}/SKILL.md",
        "cat {home}/pd\\\nf/SKILL.md",  # a line continuation inside the word
    ],
    ids=[
        "dotdot",
        "cd-dotdot",
        "brace",
        "ansi-c",
        "glob-home",
        "xargs",
        "echo-sh",
        "cat-echo-subst",
        "printf-subst",
        "cd-ddash",
        "cd-P",
        "var-default",
        "line-cont",
    ],
)
def test_shell_spelling_hides_a_read(agent: str, how: str) -> None:
    assert loaded(agent, how) == {"pdf"}
