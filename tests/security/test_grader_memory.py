"""Issue 38 GR1, fifth review: a grader runs the candidate's code as its own user, and that
code rewrote the grader's verdict in the grader's own memory (/proc/<pid>/mem, ptrace,
process_vm_writev) before the grader printed it. Every command of a checker starts sealed
(sandbox/inside/seal.py): the three routes are refused, and what an honest check does
(writing its files, moving one into another folder, running programs) still works."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.checks.run import run_checks
from skillbench.evals import load_case
from skillbench.evals.model import Check
from skillbench.results.transcript import Transcript
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm
from tests.conftest import CHANNELS
from tests.helpers import make_skill

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]

# the case's grader (trusted): holds its verdict, runs the candidate's program, prints it
GRADE = """import ctypes, os, subprocess, sys
verdict = ctypes.create_string_buffer(b'{"pass": false}')
subprocess.run([sys.executable, "solve.py", sys.argv[1], str(os.getpid()),
                str(ctypes.addressof(verdict))], stdout=subprocess.DEVNULL)
print(verdict.value.decode())
"""
# the candidate's program (the agent wrote it): makes the grader say pass
SOLVE = """import ctypes, os, sys
how, pid, addr = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
forged = b'{"pass": true} '
libc = ctypes.CDLL(None, use_errno=True)
if how == "mem":
    with open(f"/proc/{pid}/mem", "r+b", buffering=0) as fh:
        fh.seek(addr)
        fh.write(forged)
elif how == "ptrace":
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    assert libc.ptrace(16, pid, None, None) == 0, os.strerror(ctypes.get_errno())  # ATTACH
    os.waitpid(pid, 0x40000000)  # __WALL: the tracee has stopped
    padded = forged + b"\\0"
    for at in range(0, len(padded), 8):
        word = int.from_bytes(padded[at : at + 8].ljust(8, b"\\0"), "little")
        libc.ptrace(5, pid, addr + at, word)  # POKEDATA
    libc.ptrace(17, pid, None, None)  # DETACH
elif how == "vm":
    class Iov(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    data = ctypes.create_string_buffer(forged)
    local, remote = Iov(ctypes.addressof(data), len(forged)), Iov(addr, len(forged))
    libc.process_vm_writev(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
"""
CASE = """
task: Write solve.py
checks:
  - file_exists: solve.py
"""
# what an honest check still does in a sealed checker
HONEST = (
    "echo made > out.txt && cat out.txt && "
    'echo x > /tmp/t && mkdir /tmp/d && python3 -c \'import os; os.rename("/tmp/t", "/tmp/d/t")\' && '
    "cat /tmp/d/t && "
    """echo '{"pass": true}'"""
)


@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_the_candidate_cannot_rewrite_the_graders_memory(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    skill = make_skill(tmp_path, "demo", {"evals/cases/solve.yaml": CASE, "evals/grade.py": GRADE})
    case, _ = load_case(skill / "evals/cases/solve.yaml", skill)
    arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    try:
        await arm.sandbox.write_file(f"{arm.sandbox.workdir}/solve.py", SOLVE)
        checker = await check_phase(provider, spec, arm, skill)
        routes = ("mem", "ptrace", "vm")
        checks = [Check("grader", f"python3 $CASE/grade.py {how}") for how in routes]
        results = await run_checks([*checks, Check("grader", HONEST)], Transcript([]), checker)
        assert [r.passed for r in results] == [False, False, False, True], [
            r.detail for r in results
        ]
        sealed = await checker.exec("echo $SKILLBENCH_SEALED")
        assert sealed.stdout.strip() == "full"
    finally:
        await arm.close()
