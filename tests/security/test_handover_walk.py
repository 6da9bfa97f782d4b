"""Fifteenth round (issue 38): the handover's walk of the workspace was unbounded. An agent
that left enough entries (300,000 empty files 1,800 folders deep, about 1 ms each to walk)
made the handover outlast the host's 300 s wait: the arm was declared hung and its row went
unscored, so a losing candidate escaped its loss. The walk now has a budget (an entry costs
a fixed share plus its path's components); a workspace past it is refused, and the arm fails
every check, decided by checks. Real podman, the builtin agent, the fake model server."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from skillbench.evals.model import Check
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from tests.helpers import BASE, CAND, bash, conv, run_eval, skill
from tests.security.test_redteam11_checker import checked

# 1,800 folders deep, then 80,000 empty files: past the budget at about 27,000 of them (53,000
# in a check, whose files need no chown)
DEEP_TREE = (
    "mkdir -p /work/t && cd /work/t && for i in $(seq 1800); do mkdir d && cd d || exit 1; "
    "done && seq 80000 | xargs touch"
)


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_workspace_too_big_to_hand_over_fails_its_arm(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path, {"evals/cases/big.yaml": "task: Task big\nchecks:\n  - file_exists: done.txt\n"}
    )
    fake(
        {
            "conversations": [
                # the candidate does the task, then buries the workspace
                conv(CAND, "Task big", bash(f"touch done.txt && {DEEP_TREE}"), {"text": "done"}),
                conv(BASE, "Task big", bash("touch done.txt"), {"text": "done"}),
            ]
        }
    )
    _, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    (row,) = summary["rows"]
    assert (row["outcome"], row["decided_by"]) == ("loss", "checks"), (row, lines)
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    cand = next(j for j in journal if j.get("key") == "big.candidate.1")
    assert cand["outcome"] == "fail", cand
    assert any("handover: refused" in n for n in cand["notes"]), cand["notes"]
    (result,) = cand["checks"]["big"]
    assert "the handover refused the workspace" in result["detail"], result


@pytest.mark.sandbox
@pytest.mark.anyio
async def test_a_check_that_buries_the_workspace_fails_every_later_check(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """The walk after each check (the workspace handed over again) has the same budget: past
    it, no later check runs."""
    checks = [
        Check("command_succeeds", "bash solve.sh"),  # the candidate's code, run by a check
        Check("command_succeeds", "true"),
        Check("file_exists", "solve.sh"),  # (nor does a tainted checker read a file)
    ]
    results = await checked(provider, spec, tmp_path, DEEP_TREE, checks)
    assert results[0].passed, results[0].detail
    assert not results[1].passed and "handed over again" in results[1].detail, results[1]
    assert not results[2].passed and "handed over again" in results[2].detail, results[2]


def _eval(fake, tmp_path: Path, capsys, case: str, cand: str, base: str, files=None):
    folder = skill(tmp_path, {"evals/cases/big.yaml": case, **(files or {})})
    fake(
        {
            "conversations": [
                conv(CAND, "Task big", bash(cand), {"text": "done"}),
                conv(BASE, "Task big", bash(base), {"text": "done"}),
            ]
        }
    )
    _, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    (row,) = summary["rows"]
    return row, lines


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_workspace_that_breaks_the_handover_is_a_loss_not_an_error(
    fake, tmp_path: Path, capsys
) -> None:
    """Fifteenth review: a folder holding HEAD whose `commondir` is a folder had it removed in
    the middle of the walk, which then raised FileNotFoundError: the handover failed, the
    session errored, and the losing candidate's row went unscored. The walk passes over what
    is gone, and whatever else makes the first handover fail refuses the workspace."""
    row, lines = _eval(
        fake,
        tmp_path,
        capsys,
        "task: Task big\nchecks:\n  - file_exists: done.txt\n",
        "mkdir -p repo/commondir/sub && echo 'ref: refs/heads/main' > repo/HEAD",
        "touch done.txt",
    )
    assert (row["outcome"], row["decided_by"]) == ("loss", "checks"), (row, lines)


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_reward_planted_before_tainting_the_checker_is_never_read(
    fake, tmp_path: Path, capsys
) -> None:
    """Fifteenth review: the candidate's code, run by a check, wrote reward 1 where the next
    check's verifier writes its own, then buried the workspace so that the handover after the
    check tainted the checker. The verifier (and the removal of the old reward before it)
    was refused, but reading the reward file was not: the planted 1 won the row. A tainted
    checker reads nothing, and a reward whose old file could not be removed fails."""
    case = (
        "task: Task big\nchecks:\n  - command_succeeds: bash solve.sh\n"
        "  - reward: {file: /logs/verifier/reward.txt, run: verify.sh}\n"
    )
    verify = "#!/bin/bash\nmkdir -p /logs/verifier && echo 0 > /logs/verifier/reward.txt\n"
    plant = f"mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; {DEEP_TREE}"
    row, lines = _eval(
        fake,
        tmp_path,
        capsys,
        case,
        f"printf '%s\\n' {shlex.quote(plant)} > solve.sh",
        "echo true > solve.sh",
        {"evals/cases/verify.sh": verify},
    )
    assert row["outcome"] != "win", (row, lines)
    reward = row["arms"]["candidate"]["checks"][1]
    assert not reward["passed"], reward
