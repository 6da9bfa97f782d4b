"""Sandbox benchmark: medians and spreads of the podman provider's operations, the cost of
the check phase (the agent's sandbox stopped, /work handed to the fresh checker sandbox that
started on the arm's /work during the agent phase), and the throughput of full staged arm
cycles at concurrency 1, 4 and 8; then the two executor channels (sandbox/podman/channel.py) side by
side: the local one (bind mounts, a unix socket) and the api one (files copied in, an attach
to the executor's stdio), as ratios api / local.

    .venv/bin/python bench/sandbox.py [--reps N] [--channels-only]

Figures, not assertions. Ratios compare against an ideal: a raw `podman exec` for exec
latency, and perfect scaling of the single-cycle rate for throughput (capped by cores).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from skillbench.evals import load_case
from skillbench.evals.services import Service
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.image import IMAGE, image_exists
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm, start_checker


def fmt(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    q = statistics.quantiles(ms, n=10) if len(ms) >= 2 else [ms[0]] * 9
    med = statistics.median(ms)
    return f"median {med:7.1f} ms   p10 {q[0]:7.1f}   p90 {q[-1]:7.1f}   n={len(ms)}"


def make_skill(root: Path) -> Path:
    skill = root / "bench-skill"
    (skill / "evals/cases").mkdir(parents=True)
    (skill / "evals/fixtures/seed").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: bench-skill\ndescription: Benchmark.\n---\n")
    (skill / "scripts").mkdir()
    (skill / "scripts/a.sh").write_text("echo a\n")
    (skill / "evals/fixtures/seed/data.txt").write_text("x" * 10_000)
    (skill / "evals/cases/c.yaml").write_text(
        "task: t\nfixture: ../fixtures/seed\nfiles: {a.txt: a}\nsetup: echo ok > s.txt\n"
        "checks: [{file_exists: s.txt}]\n"
    )
    return skill


def one_mb_tree(root: Path) -> Path:
    tree = root / "tree"
    for i in range(16):
        (tree / f"d{i % 4}").mkdir(parents=True, exist_ok=True)
        (tree / f"d{i % 4}/f{i}.bin").write_bytes(os.urandom(64 * 1024))
    return tree


async def timed(coro) -> tuple[float, object]:
    t = time.perf_counter()
    result = await coro
    return time.perf_counter() - t, result


async def arm_cycle(provider: PodmanProvider, spec: SandboxSpec, case, skill: Path, tmp: Path):
    """One staged arm: sandbox, staging, a command, the check phase, removal."""
    arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp)
    await arm.sandbox.exec("cat a.txt s.txt data.txt > /dev/null")
    checker = await check_phase(provider, spec, arm, skill)
    await checker.exec("test -f $CASE/cases/c.yaml && test -f s.txt")
    await arm.close()


async def channels(reps: int, provider: PodmanProvider | None = None) -> None:
    """Exec latency, create+start and the arm cycle on each channel, as api / local."""
    first = provider or PodmanProvider(channel="local")
    spec = SandboxSpec(image=IMAGE)
    tmp = Path(tempfile.mkdtemp(prefix="skillbench-bench-"))
    skill = make_skill(tmp)
    case, _ = load_case(skill / "evals/cases/c.yaml", skill)
    figures: dict[str, dict[str, list[float]]] = {}
    try:
        for name in ("local", "api"):
            prov = PodmanProvider(first.service, channel=name)  # (the same podman service)
            got = figures[name] = {"create": [], "exec": [], "cycle": []}
            try:
                for _ in range(reps):
                    t, box = await timed(prov.create(spec))
                    got["create"].append(t)
                    for _ in range(20):
                        got["exec"].append((await timed(box.exec("true")))[0])
                    await box.close()
                    got["cycle"].append((await timed(arm_cycle(prov, spec, case, skill, tmp)))[0])
            finally:
                await prov.aclose()
    finally:
        if provider is None:
            await first.aclose()
    print("executor channels        local                 api            api / local")
    for key, label in (
        ("exec", "exec `true`"),
        ("create", "create+start+executor"),
        (
            "cycle",
            "full staged arm cycle",
        ),
    ):
        local, api = (statistics.median(figures[c][key]) for c in ("local", "api"))
        print(
            f"  {label:22} {local * 1000:8.1f} ms          {api * 1000:8.1f} ms"
            f"        {api / local:5.2f}"
        )


async def main(reps: int) -> None:
    if not image_exists(IMAGE):
        sys.exit(f"sandbox image {IMAGE} missing: run `make setup`")
    provider = PodmanProvider()
    spec = SandboxSpec(image=IMAGE)
    tmp = Path(tempfile.mkdtemp(prefix="skillbench-bench-"))
    skill = make_skill(tmp)
    case, _ = load_case(skill / "evals/cases/c.yaml", skill)
    tree = one_mb_tree(tmp)
    create, execs, raw, put, get, destroy = [], [], [], [], [], []
    try:
        for i in range(reps):
            t, box = await timed(provider.create(spec))
            create.append(t)
            for _ in range(10):
                execs.append((await timed(box.exec("true")))[0])
            for _ in range(3):
                t0 = time.perf_counter()
                subprocess.run(["podman", "exec", box.ctr_id, "true"], check=True)
                raw.append(time.perf_counter() - t0)
            put.append((await timed(box.put_tree(tree, "/work/tree")))[0])
            get.append((await timed(box.get_tree("/work/tree", tmp / f"back{i}")))[0])
            destroy.append((await timed(box.close()))[0])

        checks: list[float] = []

        async def cycle() -> None:
            arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp)
            start_checker(provider, spec, arm, skill)  # as the engine does, for the agent phase
            await arm.sandbox.exec("cat a.txt s.txt data.txt > /dev/null")
            t, checker = await timed(check_phase(provider, spec, arm, skill))
            checks.append(t)
            await checker.exec("test -f $CASE/cases/c.yaml && test -f s.txt")
            await arm.close()

        cycles = [(await timed(cycle()))[0] for _ in range(reps)]

        async def after_a_turn() -> float:
            # what a session waits for: its checker started during (at least) one model call
            arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp)
            start_checker(provider, spec, arm, skill)
            await asyncio.sleep(0.2)
            t, _ = await timed(check_phase(provider, spec, arm, skill))
            await arm.close()
            return t

        turned = [await after_a_turn() for _ in range(reps)]

        # a case's service (an HTTP server, health-checked) in the arm's own pod
        http = Service(
            name="svc",
            command=("python3", "-m", "http.server", "8000"),
            healthcheck=(
                "python3",
                "-c",
                "import urllib.request as u; u.urlopen('http://svc:8000/')",
            ),
        )
        podded = msgspec.structs.replace(spec, services=(http,))

        async def arm_up_and_down(arm_spec: SandboxSpec) -> None:
            arm = await stage_arm(provider, arm_spec, case, {}, scratch=tmp)
            await arm.close()

        plain = [(await timed(arm_up_and_down(spec)))[0] for _ in range(reps)]
        pods = [(await timed(arm_up_and_down(podded)))[0] for _ in range(reps)]
        check_phase_median = statistics.median(checks)
        print(f"sandbox benchmark  image {IMAGE}  cores {os.cpu_count()}")
        print(f"  create+start+executor   {fmt(create)}")
        print(f"  exec `true`             {fmt(execs)}")
        print(f"  raw `podman exec true`  {fmt(raw)}   (ideal for a fresh exec)")
        ratio = statistics.median(execs) / statistics.median(raw)
        print(f"    exec ratio to raw podman exec: {ratio:.3f}")
        print(f"  put 1 MB tree           {fmt(put)}")
        print(f"  get 1 MB tree           {fmt(get)}")
        print(f"  destroy                 {fmt(destroy)}")
        print(f"  check phase             {fmt(checks)}")
        print(
            f"    (the agent's sandbox stopped, /work handed over to the checker started "
            f"during the agent phase; "
            f"{check_phase_median / statistics.median(cycles):.0%} of a cycle)"
        )
        print(f"  check phase after 0.2 s {fmt(turned)}   (of agent phase: the session's wait)")
        print(f"  full staged arm cycle   {fmt(cycles)}")
        pod_ratio = statistics.median(pods) / statistics.median(plain)
        print(
            f"  arm with a service pod  {fmt(pods)}   ratio to a plain arm {pod_ratio:.2f} "
            f"(+{(statistics.median(pods) - statistics.median(plain)) * 1000:.0f} ms)"
        )
        single = statistics.median(cycles)
        for conc in (1, 4, 8):
            n = max(8, conc * 2)
            t0 = time.perf_counter()
            sem = asyncio.Semaphore(conc)

            async def gated(sem: asyncio.Semaphore = sem) -> None:
                async with sem:
                    await cycle()

            await asyncio.gather(*(gated() for _ in range(n)))
            wall = time.perf_counter() - t0
            ideal = n * single / min(conc, os.cpu_count() or 1)  # a cycle is CPU-bound
            print(
                f"  throughput @{conc}: {n / wall:5.2f} cycles/s   wall {wall:5.2f} s   "
                f"ideal {ideal:5.2f} s   ratio {wall / ideal:4.2f}"
            )
        await channels(reps, provider)
    finally:
        await provider.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--channels-only", action="store_true", help="only the channel table")
    args = parser.parse_args()
    asyncio.run(channels(args.reps) if args.channels_only else main(args.reps))
