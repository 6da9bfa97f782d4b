"""GR10 (issue 38): Margin's verdict policy. Its verifier exit codes are 0 pass, 1 fail, 2 infra,
and infra means "no trustworthy verdict for reasons not attributable to the candidate": a
candidate compile or import failure is a fail (Margin-Lab/evals, the suite-converter and
suite-creator skills' verdict policy). Margin's own wrapper pattern maps the test runner's
other exit codes to 2, and pytest exits 2 on a collection error, which is what a candidate
module that does not import gives.

On 2bba125 such a candidate's exit 2 made its session an infrastructure error: retried in a
fresh sandbox (a second try for the agent) and then an unscored row, so a losing candidate
erased its loss. Now a no-verdict in one arm, where the other arm's run of the same verifier
(same image, same tests) reached a verdict, is that arm's failure; in both arms, unscored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import BASE, CAND, bash, conv, run_eval, skill, write

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

# Margin's documented wrapper: 0 pass, 1 fail, anything else infra; the runner below exits as
# pytest does (2 when collecting the tests fails, as importing a broken module does)
TEST_SH = (
    "#!/bin/bash\nset -uo pipefail\ncd /work || exit 2\n"
    "python3 tests/run_tests.py\ncode=$?\n"
    'case "$code" in 0) exit 0 ;; 1) exit 1 ;; *) exit 2 ;; esac\n'
)
RUN_TESTS = (
    "import sys\nsys.path.insert(0, '/work')\n"
    "try:\n    import calc\nexcept Exception as exc:  # a collection error\n"
    "    print(f'ERROR collecting: {exc!r}')\n    sys.exit(2)\n"
    "sys.exit(0 if calc.add(2, 3) == 5 else 1)\n"
)


def case(name: str, prompt: str) -> dict[str, str]:
    return {
        f"cases/{name}/case.toml": (
            f'kind = "test_case"\nname = "{name}"\ndescription = "d"\n'
            'agent_cwd = "/work"\ntest_cwd = "/work"\ntest_timeout_seconds = 60\n'
        ),
        f"cases/{name}/env/Dockerfile": "FROM skillbench-sandbox\n",
        f"cases/{name}/prompt.md": prompt,
        f"cases/{name}/tests/test.sh": TEST_SH,
        f"cases/{name}/tests/run_tests.py": RUN_TESTS,
    }


SUITE = {
    "suite.toml": (
        'kind = "test_suite"\nname = "calc"\ndescription = "d"\ncases = ["add", "both"]\n'
    ),
    **case("add", "Write calc.py with add(a, b) returning the sum.\n"),
    **case("both", "Write calc.py with add(a, b), then run it: twice.\n"),
}
GOOD = "printf 'def add(a, b):\\n    return a + b\\n' > calc.py"
BROKEN = "printf 'def add(a, b)\\n    return a +\\n' > calc.py"  # a SyntaxError on import


def test_a_candidate_whose_code_does_not_import_fails_as_margin_says(
    fake, tmp_path: Path, capsys
) -> None:
    into = skill(tmp_path, {})
    src = write(tmp_path / "m", SUITE)
    assert main(["import", "margin", str(src), "--into", str(into)]) == 0
    capsys.readouterr()
    fake(
        {
            "conversations": [
                conv(CAND, "returning the sum", bash(BROKEN), {"text": "done"}),
                conv(BASE, "returning the sum", bash(GOOD), {"text": "done"}),
                conv("(?s)", "twice", bash(BROKEN), {"text": "done"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, into, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # two cases: too few units for a verdict
    rows = {r["case"]: r for r in summary["rows"]}
    add = rows["add"]
    assert (add["outcome"], add["decided_by"]) == ("loss", "checks"), add
    mine = add["arms"]["candidate"]["checks"][0]
    assert mine["passed"] is False and mine["detail"].startswith("exit 2 (no verdict)"), mine
    # the candidate's broken module was not a second try's chance: one session per arm
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    sessions = [j for j in journal if j["type"] == "session" and j["session"] == "add"]
    assert sorted((j["arm"], j["outcome"], j.get("attempts", 1)) for j in sessions) == [
        ("baseline", "pass", 1),
        ("candidate", "fail", 1),
    ]
    # no verdict in either arm: nothing measured, neither a tie nor a loss
    both = rows["both"]
    assert both["decided_by"] == "unscored" and "gave no verdict in either arm" in (
        both["reason"] or ""
    ), both
