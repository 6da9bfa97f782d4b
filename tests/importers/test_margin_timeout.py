"""Margin's `test_timeout_seconds` is the hard limit on test.sh (a required field of its
case.toml: its compiler copies it into the run bundle, which refuses 0). Re-running
Margin-Lab/evals' own `swe-minimal-test-suite` (issue 37) showed every case's 3,000 s imported
as "a verifier gets 600 s here": a test suite that needs 20 minutes was cut at 10, and one a
case limits to seconds ran for ten minutes. The import now writes the limit on the verifier
(`verifier: {run, timeout}`), and the checker applies it."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.evals.load import load_assets
from tests.helpers import skill, write


def suite(limit: int, test_sh: str) -> dict[str, str]:
    """A one-case Margin suite in the shape of Margin-Lab/evals' suites."""
    return {
        "suite.toml": (
            'kind = "test_suite"\nname = "slow"\ndescription = "d"\ncases = ["slow-tests"]\n'
        ),
        "cases/slow-tests/case.toml": (
            'kind = "test_case"\nname = "slow-tests"\ndescription = "d"\n'
            'agent_cwd = "/work"\ntest_cwd = "/"\n'
            f"test_timeout_seconds = {limit}\n"
        ),
        "cases/slow-tests/env/Dockerfile": "FROM skillbench-sandbox\n",
        "cases/slow-tests/prompt.md": "Write done.txt.\n",
        "cases/slow-tests/tests/test.sh": test_sh,
        "cases/slow-tests/oracle/solve.sh": '#!/bin/bash\necho ok > "$MARGIN_AGENT_CWD/done.txt"\n',
    }


def test_test_timeout_seconds_is_the_verifiers_limit(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    src = write(tmp_path / "m", suite(3000, "#!/bin/bash\ntest -f /work/done.txt\n"))
    assert main(["import", "margin", str(src), "--into", str(into)]) == 0
    said = capsys.readouterr().out
    # before: "test_timeout_seconds — a verifier gets 600 s here"
    assert "600 s" not in said, said
    assert "timeout: 3000" in (into / "evals/cases/slow-tests.yaml").read_text()
    assets = load_assets(into)
    assert not [p for p in assets.problems if p.severity == "error"], assets.problems
    (case,) = assets.cases
    (check,) = case.checks
    assert (check.kind, check.timeout) == ("verifier", 3000.0), check
    assert check.script == "cases/slow-tests/verify.sh", check


def test_a_verifier_timeout_that_is_not_seconds_is_an_error_at_its_line(tmp_path: Path) -> None:
    into = skill(
        tmp_path,
        {
            "evals/cases/c.yaml": "task: t\nchecks:\n  - verifier: {run: v.sh, timeout: soon}\n",
            "evals/cases/v.sh": "exit 0\n",
        },
    )
    problems = load_assets(into).problems
    assert any(
        p.severity == "error"
        and p.line == 3
        and "`verifier` `timeout` must be seconds" in p.message
        for p in problems
    ), problems


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_margin_verifier_past_its_limit_times_out(tmp_path: Path, capsys) -> None:
    # the reference solution is right, but test.sh takes longer than the case allows: Margin
    # kills it at test_timeout_seconds; before, it had 600 s here and passed
    into = skill(tmp_path, {})
    slow = "#!/bin/bash\nsleep 6\ntest -f /work/done.txt\n"
    assert (
        main(["import", "margin", str(write(tmp_path / "m", suite(2, slow))), "--into", str(into)])
        == 0
    )
    capsys.readouterr()
    code = main(["eval", str(into), "--oracle"])
    report = capsys.readouterr().out
    assert code == 1 and "oracle FAIL: slow-tests" in report, report
    assert "timed out after 2 s" in report, report
