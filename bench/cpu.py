"""Host CPU per arm: the CPU-seconds one staged arm cycle costs the machine, split by who
spends them, against the 0.15 CPU-s target and against a bare sandbox measured in the same run.

    .venv/bin/python bench/cpu.py [--arms N]

An arm cycle is what the engine does around an agent: a workspace and a sandbox seeded with a
fixture, files, `setup` and a skill; four agent turns, each --think seconds of model time
(0.2) and two executor calls;
the check phase (a checker sandbox on the same /work, the agent's sandbox gone, /work handed
over); two checks; everything removed. The bare sandbox (create, one exec, remove) is the floor
podman sets for one container; an arm has two.

Who spends it:
  skillbench   this process (getrusage: every thread, asyncio and the podman-py client)
  service      the podman service this run started, with the runc calls it waited for
               (/proc/<pid>/stat utime+stime+cutime+cstime)
  sandboxes    every container, its conmon, the `runc create` conmon runs and the
               `podman container cleanup` conmon runs when the container exits: all placed
               under a scratch cgroup (SKILLBENCH_CGROUP_PARENT) whose cpuacct is read;
               "of which conmon" is conmon and what it runs (runc create, the cleanup)

CPU-seconds are counted, not wall time, so other load on the machine inflates them less than
it inflates wall time (cache misses and frequency still do): compare the ratios, not the
absolute figures, across runs.

Measured (issue 27, 2 cores at load 9-19): an arm 0.41-0.47 CPU-s (2.8-3.1x the target),
two bare sandboxes 0.31-0.35 (2.1-2.3x on their own): podman's per-container floor (start,
conmon, runc, the `podman container cleanup` conmon runs at exit) is past the target before
skillbench does anything; skillbench's own share is 0.03 CPU-s per arm. With the checker
started during the agent phase and the agent's sandbox stopped through a pidfd (no podman
stop): 0.40-0.41 CPU-s against 0.42-0.43 for main in the same minutes (load 3-6), a bare
sandbox 0.14 against 0.15-0.17.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from sandbox import make_skill  # bench/sandbox.py, beside this file: the same staged arm

from skillbench.evals import load_case
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.connection import URL_ENV
from skillbench.sandbox.podman.image import IMAGE, image_exists
from skillbench.sandbox.podman.provider import CGROUP_ENV, PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm, start_checker

TARGET = 0.15  # CPU-s per arm (issue 27)
TICK = os.sysconf("SC_CLK_TCK")
CGROUP_ROOTS = (Path("/sys/fs/cgroup/cpuacct"), Path("/sys/fs/cgroup"))  # v1, then v2


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int | None) -> float:
    """utime + stime of `pid` and of its children it has waited for."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / TICK


def cgroup_cpu(parent: str) -> float:
    """CPU-seconds of everything ever run under the cgroup `parent` (0 before it exists)."""
    v1 = CGROUP_ROOTS[0] / parent.lstrip("/") / "cpuacct.usage"
    if v1.exists():
        return int(v1.read_text()) / 1e9
    v2 = CGROUP_ROOTS[1] / parent.lstrip("/") / "cpu.stat"
    if v2.exists():
        stat = dict(line.split() for line in v2.read_text().splitlines())
        return int(stat["usage_usec"]) / 1e6
    return 0.0


def remove_cgroup(parent: str) -> None:
    for root in (*CGROUP_ROOTS, Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/pids")):
        folder = root / parent.lstrip("/")
        for sub in sorted(folder.glob("**/"), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):  # (still busy: left for the next boot)
                sub.rmdir()  # a cgroup folder goes with rmdir, its files with it


class Meter:
    """CPU-seconds spent by each party over a block of work."""

    def __init__(self, service_pid: int | None, parent: str):
        self.readers = {
            "skillbench": self_cpu,
            "service": lambda: process_cpu(service_pid),
            "sandboxes": lambda: cgroup_cpu(parent),
            "conmon": lambda: cgroup_cpu(f"{parent}/conmon"),
        }

    async def measure(self, n: int, work: Callable[[], Awaitable[None]]) -> dict[str, float]:
        await asyncio.sleep(0.5)  # let the previous block's conmons finish their cleanup
        before = {k: read() for k, read in self.readers.items()}
        started = time.perf_counter()
        for _ in range(n):
            await work()
        wall = time.perf_counter() - started
        await asyncio.sleep(1.0)  # the exit commands run after the container is removed
        spent = {k: (read() - before[k]) / n for k, read in self.readers.items()}
        spent["total"] = spent["skillbench"] + spent["service"] + spent["sandboxes"]
        spent["wall"] = wall / n
        return spent


def line(label: str, spent: dict[str, float]) -> str:
    parts = "  ".join(f"{k} {spent[k]:.3f}" for k in ("skillbench", "service", "sandboxes"))
    parts += f", of which conmon {spent['conmon']:.3f}"
    return f"  {label:14} {spent['total']:.3f} CPU-s  ({parts})  wall {spent['wall'] * 1000:.0f} ms"


async def measure(arms: int, think: float) -> tuple[dict[str, float], dict[str, float], float]:
    """(a bare sandbox, an arm cycle, the highest load average seen), CPU-s each."""
    if not image_exists(IMAGE):
        sys.exit(f"sandbox image {IMAGE} missing: run `make setup`")
    if not os.access("/sys/fs/cgroup", os.W_OK) and not os.access(CGROUP_ROOTS[0], os.W_OK):
        sys.exit("bench/cpu.py needs to create a cgroup: run it as root (rootful podman)")
    parent = f"/skillbench-bench-{os.getpid()}"
    saved = {k: os.environ.get(k) for k in (CGROUP_ENV, URL_ENV)}
    os.environ[CGROUP_ENV] = parent
    os.environ.pop(URL_ENV, None)  # a service of our own, so its CPU is ours alone
    provider = PodmanProvider()
    spec = SandboxSpec(image=IMAGE)
    tmp = Path(tempfile.mkdtemp(prefix="skillbench-bench-cpu-"))
    skill = make_skill(tmp)
    case, _ = load_case(skill / "evals/cases/c.yaml", skill)
    meter = Meter(provider.service.pid, parent)

    async def bare() -> None:
        box = await provider.create(spec)
        await box.exec("true")
        await box.close()

    async def arm() -> None:
        staged = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp)
        box = staged.sandbox
        start_checker(provider, spec, staged, skill)  # as the engine does: during the turns
        for i in range(4):  # the agent's turns: the model thinking, commands, file operations
            await asyncio.sleep(think)
            await box.exec(f"cat a.txt s.txt data.txt > /dev/null; echo {i} >> log.txt")
            await box.write_file(f"out{i}.txt", "x" * 1000)
        checker = await check_phase(provider, spec, staged, skill)
        await checker.exec("test -f $CASE/cases/c.yaml && test -f s.txt")
        await checker.exec("cat out0.txt log.txt > /dev/null")
        await staged.close()

    try:
        await bare()  # warm: the image's layers in the page cache, the service's caches
        load = os.getloadavg()[0]
        floor = await meter.measure(arms, bare)
        cycle = await meter.measure(arms, arm)
        return floor, cycle, max(load, os.getloadavg()[0])
    finally:
        await provider.aclose()
        shutil.rmtree(tmp, ignore_errors=True)
        time.sleep(1.0)
        remove_cgroup(parent)
        for key, value in saved.items():
            os.environ.pop(key, None)
            if value is not None:
                os.environ[key] = value


async def main(arms: int, think: float) -> None:
    floor, cycle, load = await measure(arms, think)
    print(
        f"host CPU per arm  image {IMAGE}  cores {os.cpu_count()}  {arms} arms, "
        f"{think} s model time per turn  "
        f"load {load:.1f} (figures inflated by other load; compare ratios)"
    )
    print(line("bare sandbox", floor))
    print(line("arm cycle", cycle))
    print(
        f"    arm / two bare sandboxes {cycle['total'] / (2 * floor['total']):.2f}   "
        f"arm / target {TARGET} CPU-s {cycle['total'] / TARGET:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--arms", type=int, default=5)
    parser.add_argument("--think", type=float, default=0.2, help="model seconds per turn")
    args = parser.parse_args()
    asyncio.run(main(args.arms, args.think))
