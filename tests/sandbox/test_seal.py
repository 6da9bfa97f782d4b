"""seal.py (what a checker's commands start under) on this machine's kernel, without podman:
the routes into another process's memory are refused to the command and everything it
starts, including through a foreign system-call ABI; the rest of what a check does works."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

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


def _as_a_user() -> tuple[str, dict[str, Any]]:
    """(the interpreter, Popen's user arguments): a checker's commands run as its user, and
    root's are sealed without Landlock (seal.py); run as root, the probe runs as nobody, on
    the system's python3 (the venv's may be in root's own 0700 HOME)."""
    if os.geteuid() != 0:
        return sys.executable, {}
    return "/usr/bin/python3", {"user": 65534, "group": 65534, "extra_groups": []}


def test_a_sealed_command_reaches_no_other_process() -> None:
    python, user = _as_a_user()
    where = Path(tempfile.mkdtemp(prefix="skillbench-seal-"))
    where.chmod(0o777)
    target = where / "file.txt"
    argv = [python, "-I", "-S", seal.__file__, "--", python, "-c", PROBE]
    moved = where / "elsewhere"
    done = subprocess.run(
        [*argv, str(target), str(moved)], capture_output=True, text=True, timeout=60, **user
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
    shutil.rmtree(where)


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
