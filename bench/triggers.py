"""Trigger throughput: 200 prompts against the fake server with a fixed latency, at
--parallel 1, 16 and 64, through the real SDK. Prints wall time, the ideal
(prompts / parallel x latency), their ratio, and calls per second.

    .venv/bin/python bench/triggers.py [--latency S] [--prompts N] [--model REF]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from skillbench.models import resolve_model
from skillbench.skills import Skill
from skillbench.spec.model import Triggers
from skillbench.testing.fake_server import SpawnedServer
from skillbench.triggers import TriggerCaller, evaluate


async def main(latency: float, prompts: int, levels: list[int], ref: str) -> None:
    # The fake server runs in its own process so it does not share our GIL: what is
    # measured is the client side (SDK + trigger engine), as against a real API.
    server = SpawnedServer({"latency": latency, "rules": [
        {"when": "User request", "replies": ['{"selected": ["s"]}']}]})  # fmt: skip
    os.environ.update(server.env())
    skill = Skill("s", "A benchmark skill.", "/nonexistent", 1)
    others = [Skill(f"o{i}", f"Other skill {i}.", "/nonexistent", 1) for i in range(8)]
    triggers = Triggers("bench", tuple(f"request number {i}" for i in range(prompts)))
    print(f"trigger throughput: {prompts} prompts, model latency {latency:g} s/call, {ref}")
    try:
        for parallel in levels:
            model = resolve_model(ref, max_retries=0, timeout=60)
            caller = TriggerCaller(model, parallel)
            t = time.perf_counter()
            report = await evaluate(caller, skill, others, triggers)
            wall = time.perf_counter() - t
            await model.aclose()
            assert report.tp == prompts and caller.calls == prompts, report.errored[:3]
            ideal = prompts / parallel * latency
            print(f"  --parallel {parallel:3d}: wall {wall:6.2f} s   ideal {ideal:6.2f} s   "
                  f"ratio {wall / ideal:5.2f}   {prompts / wall:6.1f} calls/s")  # fmt: skip
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--model", default="anthropic/claude-sonnet-4-6")
    args = parser.parse_args()
    asyncio.run(main(args.latency, args.prompts, args.parallel, args.model))
