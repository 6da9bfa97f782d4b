"""RT5-ACT-FALSE (redteam5): activation counts a skill as loaded when a tool call only mentions
`skills/<name>` in text that is not the skill's folder: a path in the workspace
(`/work/repo/skills/pdf`, a repo that has its own skills/ folder), a grep pattern, a commit
message, a here-document's body written to a file, a Python comment, a file write's content.
The regex `skills/<name>` matches anywhere (transcript._SKILL_REF), and every string of every
tool call is read as a command. On an `expect_activation: false` case the candidate arm then
"loaded" the skill and loses the row (engine/activation.misfire), and activation rates are
inflated. docs/trust.md: "an `echo` of the path is no load"; docs/agents.md "Activation".

Run: PYTHONPATH=. .venv/bin/pytest attacks/redteam5/test_activation_false_loads.py
Expected: set(). Observed: {'pdf'} for each.
"""

from __future__ import annotations

import pytest

from skillbench.agents import make_agent
from skillbench.transcript import expand_loaded
from tests.test_activation_spellings import loaded


@pytest.mark.parametrize(
    "how",
    [
        "ls /work/repo/skills/pdf",
        "grep -rn 'skills/pdf' /work",
        "git commit -qm 'drop skills/pdf from the docs'",
        "cat > /work/notes.md <<'EOF'\nsee {home}/pdf/SKILL.md\nEOF",
        'python3 -c "print(1)  # {home}/pdf/SKILL.md"',
    ],
    ids=["workspace-path", "grep-pattern", "commit-message", "heredoc-body", "py-comment"],
)
def test_a_mention_that_reads_nothing_is_a_load(how: str) -> None:
    assert loaded("builtin", how) == set()


def test_a_file_write_whose_content_names_the_skill_is_a_load() -> None:
    events = [
        {
            "type": "tool_call",
            "id": "c1",
            "name": "write",
            "arguments": {"path": "/work/notes.md", "content": "Read /skills/pdf/SKILL.md."},
        },
        {"type": "tool_result", "id": "c1", "text": "ok", "is_error": False},
    ]
    assert expand_loaded(make_agent("builtin").invoked(events), ["pdf", "xlsx"]) == set()
