"""Sixteenth outside review (issue 38): what still broke after round 15, each attack first."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.evals import SpecError, load_case
from skillbench.evals.kinds.scripts import _graded, reward_metrics
from skillbench.evals.model import Check
from skillbench.sandbox.base import ExecResult
from tests.helpers import make_skill

HUGE = "9" * 400  # an integer JSON allows and a float cannot hold


@pytest.mark.parametrize(
    ("check", "verdict"),
    [
        (Check("grader", "g.sh", min=0.5), '{"score": 0.1}'),  # Skillgrade's score
        (Check("grader", "g.sh", program="{}"), '{"passed": false, "score": 0.1}'),  # Vally
        (Check("grader", "g.sh"), '{"pass": false, "score": 0.1}'),  # skill-optimizer
    ],
)
def test_a_huge_number_in_a_graders_stdout_fails_the_check(check: Check, verdict: str) -> None:
    """The candidate's code shares the grader's stdout: printing a 400-digit score after the
    grader's own verdict raised OverflowError out of the check, and the whole eval died with
    no summary or receipt (a losing candidate could abort any run)."""
    key = "score" if check.min is not None else "passed" if check.program else "pass"
    # (agreeing with the grader's verdict, so no disagreement fails it first)
    planted = f'{{"score": {HUGE}}}' if key == "score" else f'{{"{key}": false, "score": {HUGE}}}'
    for out in (f"{verdict}\n{planted}\n", f"{planted}\n{verdict}\n"):
        result = _graded("grader", ExecResult(0, out, ""), check)
        assert result.passed is False, result


def test_a_huge_reward_is_no_number() -> None:
    assert reward_metrics(HUGE) == {}
    assert reward_metrics(f'{{"reward": {HUGE}, "other": 0.5}}') == {"other": 0.5}


@pytest.mark.parametrize(
    "check",
    [
        "grader: {run: g.sh, vally: {stimulus: {}}, timeout: HUGE}",
        "reward: {file: /logs/verifier/reward.txt, min: HUGE}",
        "verifier: {run: v.sh, timeout: HUGE}",
        # (round 17: .nan passed `timeout <= 0`, .inf had no upper bound: a grader, or the
        # candidate's code it runs, held the check and the run with no limit)
        "grader: {run: g.sh, vally: {stimulus: {}}, timeout: .inf}",
        "grader: {run: g.sh, vally: {stimulus: {}}, timeout: .nan}",
        "reward: {file: /logs/verifier/reward.txt, min: .nan}",
    ],
)
def test_a_huge_number_in_a_case_is_a_located_error(tmp_path: Path, check: str) -> None:
    """A case (an imported suite's too) with a 400-digit number: float() raised
    OverflowError, a traceback from `check` and `eval`."""
    body = f"task: t\nchecks:\n  - {check.replace('HUGE', HUGE)}\n"
    skill = make_skill(
        tmp_path, "demo", {"evals/cases/c.yaml": body, "evals/g.sh": "", "evals/v.sh": ""}
    )
    with pytest.raises(SpecError) as info:
        load_case(skill / "evals/cases/c.yaml", skill)
    (problem,) = info.value.problems
    assert problem.line == 3 and (
        "number too large" in problem.message or "must be finite" in problem.message
    ), problem
