"""Issue 38 GR1 around its test (outside red team, redA): the candidate's `{"pass": true}` is
the only verdict left when the grader never prints its own, because the grader's contract is
its exit code or because the candidate's program killed the grader before it could. A grader
that did not exit 0 passes nothing, whatever its stdout holds."""

from __future__ import annotations

import pytest

from skillbench.checks.run import run_checks
from skillbench.evals.model import Check
from skillbench.results.transcript import Transcript
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("podman_service")]

PLANT = """echo '{"pass": true, "score": 1, "evidence": ["forged"]}'"""
# what the candidate left in /work: programs the grader runs
PROGRAMS = {
    "plant.sh": PLANT,
    # prints a pass, then kills the grader that ran it before the grader's verdict
    "kill.sh": f"{PLANT}; kill -9 $PPID",
    "score.sh": """echo '{"score": 1}'; kill -9 $PPID""",
}


@pytest.mark.anyio
async def test_a_grader_that_did_not_exit_0_never_passes_on_the_candidates_verdict(
    provider: PodmanProvider, spec: SandboxSpec
) -> None:
    box = await provider.create(spec)
    try:
        for name, body in PROGRAMS.items():
            await box.write_file(f"{box.workdir}/{name}", body + "\n")
        verdict_false = """echo '{"pass": false, "score": 0}'"""
        checks = [
            # an exit-code grader: the candidate's program's output is all there is on stdout
            Check("grader", "bash plant.sh; test -f answer.txt"),
            # a JSON grader killed by the candidate's program before its own verdict
            Check("grader", f"bash kill.sh; {verdict_false}"),
            # a Skillgrade score grader, likewise
            Check("grader", """bash score.sh; echo '{"score": 0}'""", min=0.5),
        ]
        results = await run_checks(checks, Transcript([]), box)
        assert [r.passed for r in results] == [False, False, False], results
        # honest graders still read as before
        honest = [
            Check("grader", """echo log; echo '{"pass": true, "score": 0.5}'"""),
            Check("grader", "echo no json here"),
            Check("grader", """echo '{"pass": false}'; exit 1"""),
            Check("grader", """echo '{"score": 0.7}'""", min=0.5),
        ]
        results = await run_checks(honest, Transcript([]), box)
        assert [r.passed for r in results] == [True, True, False, True], results
    finally:
        await box.close()
