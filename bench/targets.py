"""Issue 27's targets in one run, each as a ratio to its target beside the baseline it was
filed against (the figures measured on main before the check phase left the critical path).

    .venv/bin/python bench/targets.py [--k 2] [--arms 5]

harness overhead per arm at --parallel 1 and wall/ideal at --parallel 16 come from
bench/eval_throughput.py (0.2 s model latency, 32 sessions of 5 turns); host CPU per arm from
bench/cpu.py; claude-code against builtin from bench/agents.py (a whole run's wall time per
session, instant model); exec from a sandbox's `true` through its executor. A ratio above
1.00 misses the target by that factor. Runs take ~3 minutes on 2 cores; other load inflates
every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import agents  # bench/, beside this file
import cpu
import eval_throughput

from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.provider import PodmanProvider

# (what, target, baseline, unit): the baselines are issue 27's, measured on main (2 cores)
TARGETS = {
    "overhead": ("harness overhead per arm, --parallel 1", 0.25, 0.44, "s"),
    "wall16": ("wall / ideal at --parallel 16", 1.3, 2.19, ""),
    "cpu": ("host CPU per arm", 0.15, 0.484, "CPU-s"),
    "agents": ("claude-code / builtin session", 2.0, 2.2, ""),
    "exec": ("exec `true`", 0.010, None, "s"),
}


async def exec_median(n: int = 30) -> float:
    provider = PodmanProvider()
    try:
        box = await provider.create(SandboxSpec(image=IMAGE))
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            await box.exec("true")
            samples.append(time.perf_counter() - t)
        await box.close()
        return statistics.median(samples)
    finally:
        await provider.aclose()


async def main(k: int, arms: int) -> None:
    found: dict[str, float] = {}
    load = os.getloadavg()[0]
    levels = eval_throughput.Levels(0.2)
    try:
        wall, ideal = await levels.run(1)
        found["overhead"] = eval_throughput.overhead(wall, ideal, 1)
        wall, ideal = await levels.run(16)
        found["wall16"] = wall / ideal
    finally:
        levels.stop()
    _, cycle, seen = await cpu.measure(arms, 0.2)
    found["cpu"] = cycle["total"]
    root = Path(tempfile.mkdtemp(prefix="skillbench-bench-targets-"))
    # whole run per session: the harness around each agent, not only the agent's own turns
    builtin = agents.run("builtin", k, root)[1]
    claude = agents.run("claude-code", k, root)[1]
    found["agents"] = claude / builtin
    found["exec"] = await exec_median()
    load = max(load, seen, os.getloadavg()[0])
    print(
        f"issue 27 targets  cores {os.cpu_count()}  load up to {load:.1f} (inflates every figure)"
    )
    print(f"  {'':40} {'now':>8} {'target':>8} {'':5} {'now/target':>10} {'baseline/target':>16}")
    for key, (what, target, baseline, unit) in TARGETS.items():
        now = found[key]
        before = f"{baseline / target:16.2f}" if baseline is not None else f"{'-':>16}"
        print(f"  {what:40} {now:8.3f} {target:8.3f} {unit:5} {now / target:10.2f} {before}")
    print(f"    (claude-code {claude * 1000:.0f} ms, builtin {builtin * 1000:.0f} ms per session)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--k", type=int, default=2, help="sessions per arm for the agents line")
    parser.add_argument("--arms", type=int, default=5, help="arm cycles for the CPU line")
    args = parser.parse_args()
    asyncio.run(main(args.k, args.arms))
