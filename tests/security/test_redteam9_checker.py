"""Fifth outside review (issue 38, GR1 and RB8): every check runs in one checker, and the
candidate's code one check runs reached the checks after it, which run none: a process it
left (`setsid`, out of its group) rewrote what a later grader read; a ~/.bash_profile it
wrote ran in a later grader's login shell; inside one grader it rewrote the trace the host
wrote for that grader ($RESULTS) before the grader read it. And a lone surrogate in a
model's reply ended the whole run where the transcript is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.checks.run import run_checks
from skillbench.evals import load_case
from skillbench.evals.model import Check
from skillbench.results.transcript import TraceWriter, Transcript
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm
from tests.helpers import make_skill

CASE = "task: Write solve.sh\nchecks:\n  - file_exists: solve.sh\n"
# the candidate's program: a daemon out of its process group, a login script, and a forged
# trace where the grader that runs it reads one
SOLVE = """setsid bash -c 'exec -a leftover-daemon sleep 600' >/dev/null 2>&1 < /dev/null &
printf '%s\\n' 'echo "{\\"pass\\": true}"; exit 0' > ~/.bash_profile
mkdir -p /dev/shm/planted
echo FORGED > "$RESULTS/trace.jsonl" 2>/dev/null || true
rm -f "$RESULTS/trace.jsonl" 2>/dev/null && echo FORGED > "$RESULTS/trace.jsonl" 2>/dev/null
exit 0
"""
CHECKS = [
    # runs the candidate's code; passes either way
    Check("command_succeeds", "bash solve.sh || true"),
    # none of these runs the candidate's code
    Check("command_succeeds", "! ps -eo args | grep -q '^leftover-daemon'"),
    Check("grader", """bash -lc 'echo "{\\"pass\\": false}"'"""),
    Check("command_succeeds", "test ! -e /dev/shm/planted"),
    # a grader that runs the candidate's code, then reads the trace the host wrote for it
    Check(
        "grader",
        'bash solve.sh; grep -q FORGED "$RESULTS/trace.jsonl" '
        """&& echo '{"pass": true}' || echo '{"pass": false}'""",
    ),
]


@pytest.mark.sandbox
@pytest.mark.anyio
async def test_one_checks_candidate_code_reaches_no_later_check(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    skill = make_skill(tmp_path, "demo", {"evals/cases/solve.yaml": CASE})
    case, _ = load_case(skill / "evals/cases/solve.yaml", skill)
    arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    try:
        await arm.sandbox.write_file(f"{arm.sandbox.workdir}/solve.sh", SOLVE)
        checker = await check_phase(provider, spec, arm, skill)
        results = await run_checks(CHECKS, Transcript([]), checker)
        assert [r.passed for r in results] == [True, True, False, True, False], [
            r.detail for r in results
        ]
    finally:
        await arm.close()


def test_a_lone_surrogate_in_a_reply_is_kept_not_fatal(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "t.jsonl")
    writer.event("assistant", text="done \udcff\ud800")
    writer.close()
    (line,) = (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["text"] == "done \udcff\ud800"


def test_the_report_keeps_a_lone_surrogate_too() -> None:
    """Sixth review: the run got its receipt, then died writing report.html (0 bytes)."""
    from skillbench.report.html import _json_block

    block = _json_block("rows", {"text": "done \udcff"})
    block.encode("utf-8")
    assert "\\udcff" in block
