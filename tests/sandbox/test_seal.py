"""seal.py (what a checker's commands start under) on this machine's kernel, without podman:
the routes into another process's memory are refused to the command and everything it
starts, including through a foreign system-call ABI; the rest of what a check does works."""

from __future__ import annotations

import json
import subprocess
import sys

from skillbench.sandbox.inside import seal

PROBE = r"""
import ctypes, json, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(rc):
    return "ok" if rc >= 0 else os.strerror(ctypes.get_errno())
parent = os.getppid()
out = {}
out["ptrace"] = errno_of(libc.ptrace(0x4206, parent, None, None))  # PTRACE_SEIZE
out["vm_readv"] = errno_of(libc.syscall(310, parent, None, 0, None, 0, 0))
out["x32_getpid"] = errno_of(libc.syscall(0x40000000 | 39))
try:
    open(f"/proc/{os.getpid()}/mem", "r+b").close()
    out["proc_mem"] = "ok"
except OSError as exc:
    out["proc_mem"] = exc.strerror
with open(sys.argv[1], "w") as fh:
    fh.write("written")
os.makedirs(sys.argv[2])
os.rename(sys.argv[1], os.path.join(sys.argv[2], "moved.txt"))  # into another folder
out["child"] = subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, text=True).stdout
out["env"] = os.environ.get("SKILLBENCH_SEALED")
print(json.dumps(out))
"""


def test_a_sealed_command_reaches_no_other_process(tmp_path) -> None:
    target = tmp_path / "file.txt"
    argv = [sys.executable, "-I", "-S", seal.__file__, "--", sys.executable, "-c", PROBE]
    moved = tmp_path / "elsewhere"
    done = subprocess.run(
        [*argv, str(target), str(moved)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got == {
        "ptrace": "Operation not permitted",
        "vm_readv": "Operation not permitted",
        "x32_getpid": "Operation not permitted",
        "proc_mem": "Permission denied",
        "child": "1\n",
        "env": "full",
    }
    assert (moved / "moved.txt").read_text() == "written"


def test_unsealed_the_probe_reaches_its_parent(tmp_path) -> None:
    """The same probe without the seal: each refusal above is the seal's doing."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "f"), str(tmp_path / "d")],
        capture_output=True,
        text=True,
    )
    got = json.loads(done.stdout)
    assert got["ptrace"] == "ok" and got["vm_readv"] == "ok" and got["proc_mem"] == "ok"
    assert got["x32_getpid"] != "Operation not permitted" and got["env"] is None
