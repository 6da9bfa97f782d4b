"""Eval throughput: 32 sessions of 5 turns each against the fake server with a fixed per-call
latency, at --parallel 1, 4, 8 and 16, through the real engine, sandboxes and SDK.

    .venv/bin/python bench/eval_throughput.py [--latency S] [--parallel 1 4 8 16]

Prints wall time, the ideal (sessions / parallel x turns x latency), their ratio, and the
harness overhead per session ((wall - ideal) x parallel / sessions). Each level runs in its own
scratch SKILLBENCH_HOME: baseline reuse would otherwise serve one level's baseline sessions to the
next, and the later levels would measure half the work (wall < ideal).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

import msgspec

from skillbench.config import Settings
from skillbench.engine.plan import EvalOptions, prepare
from skillbench.engine.run import execute
from skillbench.models.fake_server import SpawnedServer
from skillbench.models.script import parse_script
from skillbench.results.records import SessionRecord

SESSIONS, TURNS = 32, 5


class Quiet:
    def planned(self, total: int, done: int) -> None: ...
    def started(self, key: str) -> None: ...
    def finished(self, record: SessionRecord, spend: float) -> None:
        assert record.outcome in ("pass", "fail"), record


def make_skill(root: Path) -> Path:
    skill = root / "bench-skill"
    (skill / "evals/cases").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: bench-skill\ndescription: Benchmark.\n---\n")
    for i in range(SESSIONS // 2):
        (skill / f"evals/cases/c{i:02d}.yaml").write_text(
            f"task: Benchmark task {i}\nchecks: [{{file_exists: out.txt}}]\n"
        )
    return skill


def ideal_check(run: Path) -> bool:
    """Every session of the run ran here (none served from the reuse cache)."""
    records = [msgspec.json.decode(x) for x in (run / "journal.jsonl").read_bytes().splitlines()]
    sessions = [r for r in records if r.get("type") == "session"]
    return len(sessions) == SESSIONS and not any(r.get("reused_from") for r in sessions)


class Levels:
    """The fake server playing the bench's script, and a scratch folder with its skill."""

    def __init__(self, latency: float):
        steps = [{"tool_calls": [{"bash": {"command": "echo step >> out.txt"}}]}] * (TURNS - 1)
        script = parse_script(
            {"latency": latency, "conversations": [{"steps": [*steps, {"text": "done"}]}]}
        )
        self.latency = latency
        self.server = SpawnedServer(msgspec.to_builtins(script))  # its own process: no GIL
        os.environ.update(self.server.env())
        self.root = Path(tempfile.mkdtemp(prefix="skillbench-bench-eval-"))
        self.skill = make_skill(self.root)

    async def run(self, parallel: int) -> tuple[float, float]:
        """(wall, ideal) seconds of the whole eval at `parallel`."""
        os.environ["SKILLBENCH_HOME"] = str(self.root / f"home-{parallel}")
        settings = Settings(
            model="anthropic/claude-sonnet-4-6",
            parallel=parallel,
            max_retries=0,
            request_timeout=30,
        )
        out = self.root / f"run-{parallel}"
        opts = EvalOptions(skill_dir=str(self.skill), settings=settings, out=str(out), seed=1)
        prepared = prepare(opts)
        t = time.perf_counter()
        result = await execute(prepared, opts, Quiet())
        wall = time.perf_counter() - t
        assert result.summary.scored_rows == SESSIONS // 2
        assert ideal_check(out), "sessions were reused"
        return wall, SESSIONS / parallel * TURNS * self.latency

    def stop(self) -> None:
        self.server.stop()


def overhead(wall: float, ideal: float, parallel: int) -> float:
    """Harness seconds per session: what the wall time has beyond the model's."""
    return (wall - ideal) * parallel / SESSIONS


async def main(latency: float, levels: list[int]) -> None:
    bench = Levels(latency)
    print(f"eval throughput: {SESSIONS} sessions x {TURNS} turns, model latency {latency:g} s/call")
    try:
        for parallel in levels:
            wall, ideal = await bench.run(parallel)
            print(
                f"  --parallel {parallel:2d}: wall {wall:6.2f} s   ideal {ideal:6.2f} s   "
                f"ratio {wall / ideal:5.2f}   harness overhead/session "
                f"{overhead(wall, ideal, parallel):5.2f} s"
            )
    finally:
        bench.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 4, 8, 16])
    args = parser.parse_args()
    asyncio.run(main(args.latency, args.parallel))
