"""Sessions through Ray: the same scripted sessions run locally and on a local cluster (a Ray
head and worker nodes on this machine, each worker with its own podman service and storage).

    .venv/bin/python bench/cluster.py [--cases N] [--latency S]

Prints the per-session overhead through Ray against a local run of the same sessions (ratio),
the throughput with one and with two worker nodes, and the driver relay's added latency per
model call (target <= 5 ms). On a 2-core machine two worker nodes share the same two cores, so
the second node shows the overhead of spreading, not a speed-up. Every level runs in its own
scratch SKILLBENCH_HOME with --fresh-baseline: no session is reused.
Note: `ray stop --force` at the end stops every Ray process on this machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from skillbench.cli import main as skillbench
from skillbench.cluster.local import LocalCluster
from skillbench.cluster.relay import DriverRelay
from skillbench.models.fake_server import SpawnedServer

MODEL = "anthropic/claude-sonnet-4-6"


def make_skill(root: Path, cases: int) -> Path:
    skill = root / "lib" / "bench"
    (skill / "evals/cases").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: bench\ndescription: Benchmark skill.\n---\n")
    for i in range(cases):
        (skill / f"evals/cases/c{i:02d}.yaml").write_text(
            f"task: Benchmark task {i}\nchecks: [{{file_exists: out.txt}}]\n"
        )
    (root / "skillbench.toml").write_text("max_retries = 0\nrequest_timeout = 30.0\n")
    return skill


def timed_eval(skill: Path, out: Path, *extra: str) -> float:
    os.environ["SKILLBENCH_HOME"] = str(out.with_name(out.name + "-home"))
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # (the report: not what is measured)
        code = skillbench(
            [
                "eval",
                str(skill),
                "--model",
                MODEL,
                "--out",
                str(out),
                "--quiet",
                "--no-gen",
                "--execution-only",
                "--fresh-baseline",
                "--parallel",
                "4",
                *extra,
            ]
        )  # (the flags as a user types them)
    assert code != 2, f"eval exited {code}"  # (a verdict of any kind is fine)
    return time.perf_counter() - started


def relay_latency(server_url: str, calls: int = 50) -> tuple[float, float]:
    """Median ms of a model call to the fake server directly and through the driver relay."""
    relay = DriverRelay().start()
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
    }
    direct, relayed = [], []
    try:
        with httpx.Client() as client:
            for _ in range(calls):
                t = time.perf_counter()
                client.post(f"{server_url}/v1/messages", json=body, headers={"x-api-key": "k"})
                direct.append(time.perf_counter() - t)
                t = time.perf_counter()
                client.post(
                    f"http://127.0.0.1:{relay.port}/anthropic/v1/messages",
                    json=body,
                    headers={"x-api-key": relay.token},
                )
                relayed.append(time.perf_counter() - t)
    finally:
        relay.stop()
    return statistics.median(direct) * 1000, statistics.median(relayed) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    step = {"tool_calls": [{"bash": {"command": "echo x > out.txt"}}]}
    server = SpawnedServer(
        {"latency": args.latency, "conversations": [{"steps": [step, {"text": "done"}]}]}
    )
    os.environ.update(server.env())
    root = Path(tempfile.mkdtemp(prefix="skillbench-bench-cluster-"))
    skill = make_skill(root, args.cases)
    sessions = 2 * args.cases
    print(f"cluster: {sessions} sessions x 2 model calls, latency {args.latency:g} s/call")
    try:
        local = timed_eval(skill, root / "local")
        print(
            f"  local             wall {local:6.2f} s   {local / sessions * 1000:6.0f} ms/session"
        )
        for workers in (1, 2):
            cluster = LocalCluster(root / f"cluster-{workers}", workers=workers, slots=4 // workers)
            cluster.start()
            try:
                timed_eval(skill, root / f"warm-{workers}", "--cluster", cluster.address)
                wall = timed_eval(skill, root / f"ray-{workers}", "--cluster", cluster.address)
            finally:
                cluster.stop()
            print(
                f"  ray, {workers} worker(s)  wall {wall:6.2f} s   "
                f"{wall / sessions * 1000:6.0f} ms/session   ratio to local {wall / local:5.2f}   "
                f"overhead/session {(wall - local) / sessions * 4 * 1000:6.0f} ms"
            )
        again = timed_eval(skill, root / "local-again")  # the load may have moved meanwhile
        print(f"  local, again      wall {again:6.2f} s   (the ratios above use the first)")
        direct, relayed = relay_latency(server.url)
        print(
            f"  driver relay: {relayed - direct:5.2f} ms added per model call "
            f"(direct {direct:.2f} ms, relayed {relayed:.2f} ms; target <= 5 ms)"
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
