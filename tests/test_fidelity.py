"""Issue 23 part 5: foreign suites run as their own harness runs them. A Margin case whose
agent starts in a repository the image holds (/testbed) and whose test.sh, run from /, calls
/tests/verifier.py: imported unmodified, its oracle passes and the arms' rows differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import BASE, CAND, bash, conv, run_eval, skill, write

MARGIN = {
    "suite.toml": 'kind = "test_suite"\nname = "repo"\ndescription = "d"\ncases = ["fix-add"]\n',
    "cases/fix-add/case.toml": (
        'kind = "test_case"\nname = "fix-add"\ndescription = "fix it"\n'
        'agent_cwd = "/testbed"\ntest_cwd = "/"\ntest_timeout_seconds = 60\n'
    ),
    "cases/fix-add/prompt.md": "calc.py in your folder adds wrongly: fix add().\n",
    # the repository is the image's, at /testbed (as an SWE-style suite's images hold it)
    "cases/fix-add/env/Dockerfile": (
        "FROM skillbench-sandbox\nRUN mkdir -p /testbed && "
        "printf 'def add(a, b):\\n    return a - b\\n' > /testbed/calc.py && "
        "echo repo > /testbed/README\n"
    ),
    "cases/fix-add/tests/test.sh": (
        "#!/bin/bash\ncd /testbed || exit 2\n[ -f /tests/verifier.py ] || exit 2\n"
        "python3 /tests/verifier.py\n"
    ),
    "cases/fix-add/tests/verifier.py": (
        "import sys\nsys.path.insert(0, '/testbed')\nimport calc\n"
        "sys.exit(0 if calc.add(2, 3) == 5 and open('README').read() == 'repo\\n' else 1)\n"
    ),
    "cases/fix-add/oracle/solve.sh": "#!/bin/bash\nsed -i 's/a - b/a + b/' calc.py\n",
}


def test_margin_agent_cwd_is_the_workspace_and_tests_are_at_slash_tests(
    tmp_path: Path, capsys
) -> None:
    into = skill(tmp_path, {})
    assert main(["import", "margin", str(write(tmp_path / "m", MARGIN)), "--into", str(into)]) == 0
    out = capsys.readouterr().out
    assert "not mapped (1):" in out and "test_timeout_seconds" in out, out  # the cwds are mapped
    case = (into / "evals/cases/fix-add.yaml").read_text()
    assert "workdir: /testbed" in case and "harbor: fix-add" in case


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_margin_repo_in_the_image_is_the_agents_cwd_end_to_end(
    fake, tmp_path: Path, capsys
) -> None:
    into = skill(tmp_path, {})
    assert main(["import", "margin", str(write(tmp_path / "m", MARGIN)), "--into", str(into)]) == 0
    capsys.readouterr()
    # the candidate edits calc.py by its relative name: only there when /testbed is its cwd
    fake(
        {
            "conversations": [
                conv(CAND, "adds wrongly", bash("sed -i 's/a - b/a + b/' calc.py"), {"text": "ok"}),
                conv(BASE, "adds wrongly", bash("ls > listing.txt"), {"text": "ok"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, into, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # one case: too few units for a verdict (INCONCLUSIVE)
    row = summary["rows"][0]
    assert row["outcome"] == "win", lines
    assert row["arms"]["baseline"]["checks"][0]["passed"] is False  # exit 1, not 2
    assert main(["eval", str(into), "--oracle", "--model", "scripted/demo"]) == 0
    assert "oracle PASS: fix-add" in capsys.readouterr().out
