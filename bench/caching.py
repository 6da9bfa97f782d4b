"""Prompt caching: billed input tokens of a 5-turn builtin session with caching vs without,
measured in one run against the fake server (its prefix cache follows each provider's rules,
skillbench/models/fake_cache.py), in a real podman sandbox with this repository's skills staged.

    .venv/bin/python bench/caching.py [--sessions N] [--turns 5,10]

The session is the candidate arm of a typical eval: four skills in the catalog, the agent
loads one (its SKILL.md enters the conversation), runs commands, writes a file, answers; a
longer session runs more commands before it writes.
Billed input tokens count each input token at what it is billed relative to plain input:
Anthropic reads at 0.1x and writes at 1.25x; OpenAI reads at its model's cached rate (GPT-4.1:
0.25x) and caches without being asked, so its "without" is the same prompts at full price.
The figure to reach (issue 36): with / without <= 0.4.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

import msgspec

from skillbench.agents.builtin.loop import SkillInfo, run_agent
from skillbench.evals.model import Session
from skillbench.models import resolve_model
from skillbench.models.anthropic_api import AnthropicModel
from skillbench.models.base import Model, Usage
from skillbench.models.fake_server import SpawnedServer
from skillbench.models.pricing import price_for
from skillbench.models.script import parse_script
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import stage_arm
from skillbench.skills import read_skill
from skillbench.transcript import TraceWriter

REPO = Path(__file__).resolve().parent.parent
TASK = (
    "Review the change in /work/change.diff for correctness and style. Write your findings "
    "to /work/review.md as a list of issues, each with the file, the line and a suggested "
    "fix, most serious first; say so plainly when the change is fine."
)
LOAD = {"text": "I will load the review skill.", "tool_calls": [{"skill": {"name": "diff-review"}}]}
READ = {
    "text": "Reading the change.",
    "tool_calls": [{"bash": {"command": "cat /work/change.diff"}}],
}
LOOK = {"text": "Checking the tree.", "tool_calls": [{"bash": {"command": "ls -la /work"}}]}
WRITE = {
    "text": "Writing the review.",
    "tool_calls": [
        {
            "write_file": {
                "path": "review.md",
                "content": "- change.diff:3: the loop misses the last item; use <=.\n",
            }
        }
    ],
}
ANSWER = {"text": "The review is in /work/review.md: one off-by-one issue, with its fix."}


def steps(turns: int) -> list[dict]:
    """A session of `turns` model calls (at least 5)."""
    return [LOAD, READ, *[LOOK] * (turns - 4), WRITE, ANSWER]


DIFF = (
    "--- a/count.py\n+++ b/count.py\n@@ -1,4 +1,4 @@\n def count(items):\n"
    "-    return len(items)\n+    n = 0\n+    for i in range(len(items) - 1):\n+        n += 1\n"
    "+    return n\n"
)


def billed_input(ref: str, usage: Usage) -> float:
    """Input tokens weighted by what each is billed relative to a plain input token."""
    price = price_for(ref)
    assert price is not None and price.cache_read is not None
    write = price.cache_write or price.input * 1.25
    hour = price.cache_write_1h or price.input * 2
    return (
        usage.input_tokens
        + usage.cache_read_tokens * price.cache_read / price.input
        + usage.cache_write_tokens * write / price.input
        + usage.cache_write_1h_tokens * hour / price.input
    )


async def session(model: Model, provider: PodmanProvider, tmp: Path, n: int, turns: int) -> Usage:
    skills = [read_skill(p) for p in sorted((REPO / "skills").iterdir()) if p.is_dir()]
    staged = await stage_arm(
        provider,
        SandboxSpec(image=IMAGE),
        Session(name="review", path="", task=TASK),
        {s.name: Path(s.path) for s in skills},
        scratch=tmp / "scratch",
    )
    box = staged.sandbox
    try:
        await box.write_file("change.diff", DIFF)
        trace = TraceWriter(tmp / f"{n}.jsonl")
        result = await run_agent(
            model,
            box,
            task=TASK,
            skills=[SkillInfo(s.name, s.description) for s in skills],
            trace=trace,
            max_turns=turns,
            timeout_s=300,
        )
        trace.close()
    finally:
        await staged.close()
    assert result.turns == turns and result.stop_reason == "end_turn", result
    return result.usage


async def main(sessions: int, lengths: list[int]) -> None:
    provider = PodmanProvider()
    try:
        for turns in lengths:
            await measure(provider, sessions, turns)
    finally:
        await provider.aclose()


async def measure(provider: PodmanProvider, sessions: int, turns: int) -> None:
    script = parse_script({"conversations": [{"steps": steps(turns)}]})
    server = SpawnedServer(msgspec.to_builtins(script))
    os.environ.update(server.env())
    tmp = Path(tempfile.mkdtemp(prefix="skillbench-bench-caching-"))
    sonnet = "anthropic/claude-sonnet-4-6"
    print(f"billed input tokens of a {turns}-turn builtin session, fake server, {sessions}x")
    try:
        runs: dict[str, list[float]] = {}
        # without first: its requests carry no breakpoint, so they leave nothing in the cache
        for label, make in [
            ("anthropic without caching", lambda: AnthropicModel(sonnet, caching=False)),
            ("anthropic with caching", lambda: AnthropicModel(sonnet)),
            ("openai (automatic)", lambda: resolve_model("openai/gpt-4.1")),
        ]:
            figures = []
            for i in range(sessions):
                model = make()
                usage = await session(model, provider, tmp, len(runs) * 100 + i, turns)
                await model.aclose()
                figures.append(billed_input(model.ref, usage))
                if label.startswith("openai"):  # the same prompts, nothing read from a cache
                    plain = usage.input_tokens + usage.cache_read_tokens
                    runs.setdefault("openai without a cache", []).append(plain)
            runs[label] = figures
        for label, figures in runs.items():
            print(f"  {label:28} {sum(figures) / len(figures):9.0f} billed input tokens")
        a = sum(runs["anthropic with caching"]) / sum(runs["anthropic without caching"])
        o = sum(runs["openai (automatic)"]) / sum(runs["openai without a cache"])
        print(f"  ratio with/without: anthropic {a:.2f}x, openai {o:.2f}x (target <= 0.4x)")
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--turns", default="5,10", help="session lengths, comma-separated")
    args = parser.parse_args()
    asyncio.run(main(args.sessions, [int(t) for t in args.turns.split(",")]))
