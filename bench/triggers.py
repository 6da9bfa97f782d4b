"""Trigger throughput, both methods, against the fake server with a fixed latency per call.

The catalog call: 200 prompts at --parallel 1, 16 and 64 through the real SDK; wall time, the
ideal (prompts / parallel x latency), their ratio, and calls per second.

Real routing (--agents): a handful of prompts routed by each real agent CLI in its sandbox
(one session per prompt: load the skill, then answer; two model calls). Per prompt: sessions,
model calls, seconds, against the catalog call's one call, at --parallel 1 and 4.

    .venv/bin/python bench/triggers.py [--latency S] [--prompts N] [--agents claude-code codex]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from skillbench.config import Settings
from skillbench.engine.routing import measure
from skillbench.engine.triggers import TriggerCaller, TriggerTarget, evaluate
from skillbench.evals.model import Triggers
from skillbench.evals.skills import Skill, read_skill
from skillbench.models import resolve_model
from skillbench.models.fake_server import SpawnedServer

MODELS = {"claude-code": "anthropic/claude-sonnet-4-6", "codex": "openai/gpt-5.1"}


async def main(latency: float, prompts: int, levels: list[int], ref: str) -> None:
    # The fake server runs in its own process so it does not share our GIL: what is
    # measured is the client side (SDK + trigger engine), as against a real API.
    server = SpawnedServer(
        {
            "latency": latency,
            "rules": [
                {"when": "User request", "replies": ['{"nonce": "$FRAME_ID", "selected": ["s"]}']}
            ],
        }
    )
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
            print(
                f"  --parallel {parallel:3d}: wall {wall:6.2f} s   ideal {ideal:6.2f} s   "
                f"ratio {wall / ideal:5.2f}   {prompts / wall:6.1f} calls/s"
            )
    finally:
        server.stop()


def _load(agent: str, name: str) -> dict[str, object]:
    if agent == "codex":
        return {"exec_command": {"cmd": f"cat ~/.codex/skills/{name}/SKILL.md"}}
    return {"Skill": {"skill": name}}


def routing(latency: float, prompts: int, agents: list[str], levels: list[int]) -> None:
    """Seconds per prompt when the real agent routes it, next to the catalog call's."""
    root = Path(tempfile.mkdtemp(prefix="bench-routing-"))
    for name in ("s", "o1", "o2"):
        (root / name).mkdir()
        (root / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Skill {name} for the benchmark.\n---\nDo it.\n"
        )
    library = [read_skill(root / n) for n in ("o1", "o2")]
    target = TriggerTarget(
        read_skill(root / "s"),
        Triggers("bench", tuple(f"routed request {i}" for i in range(prompts))),
        library,
    )
    print(
        f"\nreal routing: {prompts} prompts (+1 canary), model latency {latency:g} s/call; "
        f"the catalog call is 1 call = {latency:g} s per prompt"
    )
    for agent in agents:
        steps = [{"tool_calls": [_load(agent, "s")]}, {"text": "Done."}]
        server = SpawnedServer(
            {"latency": latency, "conversations": [{"when": "(?s)", "steps": steps}]}
        )
        os.environ.update(server.env())
        try:
            for parallel in levels:
                settings = Settings(model=MODELS[agent], parallel=parallel, max_retries=0)
                t = time.perf_counter()
                (report,) = asyncio.run(
                    measure(settings, [target], method="agent", agent=agent, runs=1, threshold=0.5)
                )
                wall = time.perf_counter() - t
                assert report.invalid is None and report.tp == prompts, report
                sessions = prompts + 1
                per = wall / sessions * parallel  # seconds a prompt holds one of the slots
                print(
                    f"  {agent:11s} --parallel {parallel}: {sessions} sessions, "
                    f"{2 * sessions} model calls, wall {wall:6.2f} s, {per:5.2f} s per prompt "
                    f"per slot = {per / latency:4.1f}x the catalog call's"
                )
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--model", default="anthropic/claude-sonnet-4-6")
    parser.add_argument("--agents", nargs="*", default=["claude-code", "codex"])
    parser.add_argument("--routed", type=int, default=8, help="prompts for real routing")
    args = parser.parse_args()
    asyncio.run(main(args.latency, args.prompts, args.parallel, args.model))
    if args.agents:
        routing(args.latency, args.routed, args.agents, [1, 4])
