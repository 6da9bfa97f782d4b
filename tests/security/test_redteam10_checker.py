"""Sixth outside review (issue 38, GR1): after the round-five sweep, the candidate's code one
check runs still reached later checks: a process whose leader thread exited showed as a
zombie and was passed over while its other thread ran on; a reward file it locked (0444)
was read as a later verifier's; a git filter it planted after the handover ran in a later
check's `git diff`. And the sweep emptied root's HOME, which an honest root verifier reads."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from skillbench.checks.run import run_checks
from skillbench.evals import load_case
from skillbench.evals.model import Check
from skillbench.results.transcript import Transcript
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm
from tests.helpers import make_skill

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]

CASE = "task: Write solve.sh\nchecks:\n  - file_exists: solve.sh\n"
ZOMBIE = r"""
import ctypes, os, threading, time
if os.fork(): os._exit(0)
os.setsid()
def work():
    time.sleep(1.0)
    open("/work/late-zombie", "w").write("alive\n")
    time.sleep(600)
threading.Thread(target=work).start()
time.sleep(0.2)
ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: the leader thread only
"""
SOLVE = f"""cat > /tmp/z.py <<'PY'
{ZOMBIE}
PY
python3 /tmp/z.py </dev/null >/dev/null 2>&1
git config filter.x.clean 'sh -c "touch /tmp/filter-ran; cat"'
echo '* filter=x' > .gitattributes
echo changed >> tracked.txt
mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt
chmod 0444 /logs/verifier/reward.txt
sleep 0.3
"""
VERIFIER = "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n"
ROOT_VERIFIER = "#!/bin/bash\ntest -e /root/.bashrc && test -e /root/.profile\n"


async def test_what_one_check_left_reaches_no_later_check(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    spec = msgspec.structs.replace(spec, logs=True)
    skill = make_skill(
        tmp_path, "demo", {"evals/cases/solve.yaml": CASE, "evals/cases/tests/v.sh": VERIFIER}
    )
    case, _ = load_case(skill / "evals/cases/solve.yaml", skill)
    arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    try:
        made = await arm.sandbox.exec(
            "git init -q . && echo a > tracked.txt && git add -A && "
            "git -c user.email=a@b -c user.name=a commit -qm x",
            timeout=60,
        )
        assert made.ok, made.stderr
        await arm.sandbox.write_file(f"{arm.sandbox.workdir}/solve.sh", SOLVE)
        checker = await check_phase(provider, spec, arm, skill)
        checks = [
            Check("command_succeeds", "bash solve.sh || true"),  # the candidate's code
            Check("command_succeeds", "sleep 1.5; test ! -e /work/late-zombie"),
            Check("command_succeeds", "git diff --stat >/dev/null; test ! -e /tmp/filter-ran"),
            Check("reward", "/logs/verifier/reward.txt", script="cases/tests/v.sh"),
        ]
        results = await run_checks(checks, Transcript([]), checker)
        assert [r.passed for r in results] == [True, True, True, False], [r.detail for r in results]
        assert "reward 0" in results[3].detail
    finally:
        await arm.close()


async def test_a_root_verifier_keeps_roots_home(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    spec = msgspec.structs.replace(spec, logs=True, as_root=("verifier",))
    skill = make_skill(
        tmp_path, "demo", {"evals/cases/solve.yaml": CASE, "evals/cases/tests/v.sh": ROOT_VERIFIER}
    )
    case, _ = load_case(skill / "evals/cases/solve.yaml", skill)
    arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    try:
        checker = await check_phase(provider, spec, arm, skill)
        checks = [Check("verifier", "tests/v.sh", script="cases/tests/v.sh")]
        (result,) = await run_checks(checks, Transcript([]), checker, root=("verifier",))
        assert result.passed, result.detail
    finally:
        await arm.close()
