"""`eval --oracle` proves both halves of a case, as Harbor's own smoke test does with its
`oracle` and `nop` agents: the reference solution passes every check, and a run that does
nothing fails them. A case whose checks pass untouched measures nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import skill

SOLVE = "#!/bin/sh\necho hello > out.txt\n"


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_oracle_runs_a_do_nothing_control_and_flags_checks_that_pass_untouched(
    tmp_path: Path, capsys
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/solve.sh": SOLVE,
            "evals/cases/proven.yaml": (
                "task: Write hello to out.txt\noracle: solve.sh\nchecks:\n  - file_exists: out.txt\n"
            ),
            # the solution passes, but so does doing nothing: the check cannot fail
            "evals/cases/vacuous.yaml": (
                "task: Write hello to out.txt\noracle: solve.sh\n"
                "checks:\n  - file_absent: never-written.txt\n"
            ),
        },
    )
    out = tmp_path / "oracle"
    code = main(["eval", str(folder), "--oracle", "--model", "scripted/demo", "--out", str(out)])
    report = capsys.readouterr().out.splitlines()
    assert "oracle PASS: proven" in report, report
    assert (
        "oracle NOT-DISCRIMINATING: vacuous — the solution passes, but so does a run that does "
        "nothing: the checks do not measure the task"
    ) in report
    assert report[-1] == (
        "oracle: 2 of 2 reference solution(s) pass every check; 1 not discriminating "
        "(doing nothing passes too)"
    )
    assert code == 1  # a case that measures nothing is not proven
    saved = {r["case"]: r for r in json.loads((out / "oracle.json").read_text())}
    assert saved["proven"]["do_nothing_passed"] is False
    assert saved["vacuous"]["do_nothing_passed"] is True


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_a_case_whose_image_cannot_build_is_skipped_and_the_others_run(
    tmp_path: Path, capsys
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/solve.sh": SOLVE,
            "evals/cases/proven.yaml": (
                "task: Write hello to out.txt\noracle: solve.sh\nchecks:\n  - file_exists: out.txt\n"
            ),
            # a real suite's Dockerfile that fails (a RUN step exits non-zero)
            "evals/cases/broken.yaml": (
                "task: Write hello to out.txt\noracle: solve.sh\n"
                "containerfile: broken/Dockerfile\nchecks:\n  - file_exists: out.txt\n"
            ),
            "evals/cases/broken/Dockerfile": "FROM skillbench-sandbox\nRUN exit 3\n",
        },
    )
    code = main(["eval", str(folder), "--oracle", "--model", "scripted/demo"])
    captured = capsys.readouterr()
    report = captured.out.splitlines()
    assert "oracle PASS: proven" in report, (report, captured.err)
    skipped = [line for line in report if "broken" in line]
    assert len(skipped) == 1 and "evals/cases/broken.yaml: the case's image" in skipped[0], report
    assert skipped[0].startswith("oracle SKIP: broken — ") and "RUN exit 3" not in report[-1]
    assert "offline, FROM must name a local image" not in skipped[0]  # its FROM was fine
    assert report[-1].endswith("; 1 case(s) skipped"), report
    assert "Traceback" not in captured.err
    assert code == 0  # every case that could run is proven; the skip is in the report


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_with_every_case_skipped_the_oracle_says_none_could_run(tmp_path: Path, capsys) -> None:
    """Issue 37 (Margin): every case skipped read 'no case has a reference solution'."""
    folder = skill(
        tmp_path,
        {
            "evals/cases/solve.sh": SOLVE,
            "evals/cases/broken.yaml": (
                "task: Write hello to out.txt\noracle: solve.sh\n"
                "containerfile: broken/Dockerfile\nchecks:\n  - file_exists: out.txt\n"
            ),
            "evals/cases/broken/Dockerfile": "FROM skillbench-sandbox\nRUN exit 3\n",
        },
    )
    code = main(["eval", str(folder), "--oracle", "--model", "scripted/demo"])
    captured = capsys.readouterr()
    assert code == 2
    said = captured.out + captured.err
    assert "no case has a reference solution" not in said, said
    assert "skillbench: no reference solution could run: 1 case(s) skipped" in captured.err
    assert "oracle SKIP: broken — " in captured.out and "podman build failed" in captured.out
    assert "Traceback" not in said, said
