"""Agent-loop overhead per turn: wall time not spent in the model nor in the command itself,
for 50-turn sessions against the fake server with zero latency, in a real podman sandbox.

    .venv/bin/python bench/agent.py [--sessions N] [--turns N]

The ideal overhead is zero; the figure printed is what the loop, the tool dispatch, the
executor round trip and the transcript cost per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import msgspec

from skillbench.agents.builtin.loop import run_agent
from skillbench.models import resolve_model
from skillbench.models.base import Completion, Message, Model, ToolSpec
from skillbench.models.fake_server import SpawnedServer
from skillbench.models.script import parse_script
from skillbench.results.transcript import TraceWriter, read_trace
from skillbench.sandbox.base import ExecResult, SandboxSpec
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.provider import PodmanProvider


class TimedModel:
    """Wraps a model and adds up the time spent waiting for it."""

    def __init__(self, inner: Model):
        self.inner, self.ref, self.spent = inner, inner.ref, 0.0

    async def complete(
        self, *, system: str, messages: list[Message], tools: list[ToolSpec], max_tokens: int
    ) -> Completion:
        t = time.perf_counter()
        try:
            return await self.inner.complete(
                system=system, messages=messages, tools=tools, max_tokens=max_tokens
            )
        finally:
            self.spent += time.perf_counter() - t

    async def aclose(self) -> None:
        await self.inner.aclose()


def _recording(exec_fn, sink: list[ExecResult]):
    """Wrap Sandbox.exec to keep each result (its duration is measured in the sandbox)."""

    async def wrapped(*args, **kwargs) -> ExecResult:
        result = await exec_fn(*args, **kwargs)
        sink.append(result)
        return result

    return wrapped


async def main(sessions: int, turns: int) -> None:
    script = parse_script(
        {
            "conversations": [
                {
                    "loop": True,
                    "steps": [{"text": "step", "tool_calls": [{"bash": {"command": "echo hi"}}]}],
                }
            ]
        }
    )
    server = SpawnedServer(msgspec.to_builtins(script))  # its own process: no shared GIL
    os.environ.update(server.env())
    provider = PodmanProvider()
    tmp = Path(tempfile.mkdtemp(prefix="skillbench-bench-agent-"))
    print(f"agent loop overhead, {sessions} sessions x {turns} turns, fake server latency 0")
    try:
        for ref in ("anthropic/claude-sonnet-4-6", "openai/gpt-4.1", "scripted/_bench"):
            if ref.startswith("scripted"):
                (tmp / "_bench.yaml").write_text(
                    "conversations: [{loop: true, steps: [{text: step, tool_calls: "
                    '[{bash: {command: "echo hi"}}]}]}]\n'
                )
                os.environ["SKILLBENCH_SCRIPTS"] = str(tmp)
            per_turn, model_share = [], []
            for i in range(sessions):
                model = TimedModel(resolve_model(ref, max_retries=0, timeout=30))
                box = await provider.create(SandboxSpec(image=IMAGE))
                durations: list[ExecResult] = []
                box.exec = _recording(box.exec, durations)  # type: ignore[method-assign]
                trace = TraceWriter(tmp / f"{i}.jsonl")
                t = time.perf_counter()
                result = await run_agent(
                    model, box, task="loop", skills=[], trace=trace, max_turns=turns, timeout_s=600
                )
                wall = time.perf_counter() - t
                trace.close()
                await box.close()
                await model.aclose()
                inside = sum(r.duration for r in durations)
                assert len(read_trace(tmp / f"{i}.jsonl").events) == 2 + 3 * turns + 1
                assert result.turns == turns, result
                overhead = wall - model.spent - inside
                per_turn.append(overhead / turns)
                model_share.append(model.spent / turns)
            med = statistics.median(per_turn) * 1000
            call = statistics.median(model_share) * 1000
            print(
                f"  {ref:32} overhead/turn median {med:6.2f} ms   "
                f"(model call incl. HTTP {call:6.2f} ms/turn)"
            )
    finally:
        await provider.aclose()
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main(args.sessions, args.turns))
