"""Memory per concurrent session, per agent: what bounds `--parallel` on a real machine.

    .venv/bin/python bench/memory.py [--agents builtin claude-code codex] [--parallel 4]

For each agent, a one-case skill (one shell turn, then an answer, against the fake server) is
evaluated end to end twice, in its own scratch SKILLBENCH_HOME (no reuse): at --parallel 1
with 2 sessions, then at --parallel P with P sessions at once. Every sandbox goes under a
scratch cgroup (SKILLBENCH_CGROUP_PARENT), whose peak (memory.max_usage_in_bytes on cgroup
v1, memory.peak on v2: the sandboxes, the checkers and their conmons together) is read after
each run; the host side is the skillbench process's peak RSS (the broker and the relay run
in it), from wait4. Per session: (peak at P - peak at 1) / (P - 1), for the sandboxes and for
the host side; the fixed part is what is left of the --parallel 1 peaks (skillbench itself,
and the overlap of a session's sandbox with its checker).

The figures go into skillbench/sandbox/capacity.py, which `skillbench doctor` and the
`--parallel` warning read. Memory, unlike time, is barely moved by other load on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from skillbench.models.fake_server import SpawnedServer
from skillbench.sandbox.capacity import fits, mem_available
from skillbench.sandbox.podman.provider import CGROUP_ENV

BASH = {"builtin": ("bash", "command"), "claude-code": ("Bash", "command")}
BASH["codex"] = ("exec_command", "cmd")
BASH["gemini-cli"] = ("run_shell_command", "command")
BASH["copilot"] = ("bash", "command")
MODEL = {"codex": "openai/gpt-5.1", "gemini-cli": "google/gemini-2.5-pro"}  # the others: anthropic
MODEL["copilot"] = "openai/gpt-5.1"
MIB = 1 << 20


def make_skill(root: Path, agent: str) -> Path:
    folder = root / "lib" / "bench"
    (folder / "evals/cases").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: bench\ndescription: Benchmark skill.\n---\n")
    (folder / "evals/cases/one.yaml").write_text(
        "task: Write out.txt\nchecks: [{file_exists: out.txt}]\n"
    )
    (root / "skillbench.toml").write_text(f'agent = "{agent}"\n')
    return folder


def cgroup_peak(parent: str) -> int:
    v1 = Path("/sys/fs/cgroup/memory") / parent.lstrip("/") / "memory.max_usage_in_bytes"
    v2 = Path("/sys/fs/cgroup") / parent.lstrip("/") / "memory.peak"
    for path in (v1, v2):
        if path.exists():
            return int(path.read_text())
    return 0


def remove_cgroup(parent: str) -> None:
    for root in (Path("/sys/fs/cgroup"), *Path("/sys/fs/cgroup").iterdir()):
        folder = root / parent.lstrip("/")
        for sub in sorted(folder.glob("**/"), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):  # (still busy: left for the next boot)
                sub.rmdir()


def run(agent: str, parallel: int, sessions: int, root: Path) -> tuple[int, int]:
    """(the sandboxes' cgroup peak, skillbench's peak RSS) for one eval, in bytes."""
    tool, arg = BASH[agent]
    step = {"tool_calls": [{tool: {arg: "echo x > out.txt"}}]}
    server = SpawnedServer(
        {"conversations": [{"when": "(?s)Write out.txt", "steps": [step, {"text": "done"}]}]}
    )
    where = root / f"{agent}-{parallel}"
    parent = f"/skillbench-bench-mem-{os.getpid()}-{agent}-{parallel}"
    env = {**os.environ, **server.env(), "SKILLBENCH_HOME": str(where / "home")}
    env[CGROUP_ENV] = parent
    try:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "skillbench", "eval", str(make_skill(where, agent))),
                *("--model", MODEL.get(agent, "anthropic/claude-sonnet-4-6")),
                *("--k", str(sessions // 2), "--parallel", str(parallel)),
                *("--no-gen", "--quiet", "--execution-only", "--out", str(where / "run")),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        errors = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1, 3):  # any verdict: these runs decide nothing
            sys.exit(f"{agent} eval failed ({proc.returncode}): {errors.decode()[-800:]}")
        return cgroup_peak(parent), usage.ru_maxrss * 1024
    finally:
        server.stop()
        remove_cgroup(parent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", nargs="+", default=["builtin", "claude-code", "codex"])
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    if not os.access("/sys/fs/cgroup", os.W_OK) and not os.access("/sys/fs/cgroup/memory", os.W_OK):
        sys.exit("bench/memory.py needs to create a cgroup: run it as root (rootful podman)")
    root = Path(tempfile.mkdtemp(prefix="skillbench-bench-mem-"))
    p = args.parallel
    available = mem_available()
    print(
        f"memory per concurrent session  --parallel 1 (2 sessions) and {p} ({p} sessions), "
        f"MemAvailable {available / (1 << 30):.1f} GiB"
    )
    for agent in args.agents:
        box1, host1 = run(agent, 1, 2, root)
        box_p, host_p = run(agent, p, p, root)
        box = max(0, box_p - box1) // (p - 1)
        host = max(0, host_p - host1) // (p - 1)
        fixed = max(0, box1 + host1 - box - host)
        print(
            f"  {agent:12} sandboxes peak {box1 / MIB:6.0f} MiB at 1, {box_p / MIB:6.0f} at {p}; "
            f"skillbench {host1 / MIB:4.0f} / {host_p / MIB:4.0f} MiB   per session "
            f"{box / MIB:5.0f} + {host / MIB:3.0f} MiB, fixed {fixed / MIB:4.0f} MiB   "
            f"fits --parallel {fits(box + host, fixed, available)} here"
        )


if __name__ == "__main__":
    main()
