"""Prompt caching: billed input tokens of a 5-turn builtin session with caching vs without,
measured in one run against the fake server (its prefix cache follows each provider's rules,
skillbench/models/fake_cache.py), in a real podman sandbox with this repository's skills staged.

    .venv/bin/python bench/caching.py [--sessions N] [--turns 5,10]

The session is the candidate arm of a typical eval: four skills in the catalog, the agent
loads one (its SKILL.md enters the conversation), runs commands, writes a file, answers; a
longer session runs more commands before it writes.
Billed input tokens count each input token at what it is billed relative to plain input:
Anthropic reads at 0.1x and writes at 1.25x, and caches nothing shorter than the model's
minimum (1024 tokens for Sonnet 4.5, 2048 for Sonnet 4.6, 4096 for Opus 4.6); OpenAI caches
without being asked and reads at its model's cached rate (GPT-5: 0.1x, GPT-4.1: 0.25x), so
its "without" is the same prompts at full price and one run is priced for both models.
A request with tools also carries the system prompt Anthropic adds for tool use (346 tokens),
which is billed and cached with the tools (skillbench/models/fake_cache.py).
Each line judges the first session, whose cache starts cold, and prints its ideal: what a
cache with foresight would bill for the same prompts under the same rules (every prefix the
model can cache written once, read by every later turn, the last turn writing nothing); the
loop reaching its ideal says the breakpoints are right, and a gap between the ideal and 0.4x
is the provider's rules, not the loop's. It then prints the ratio over all sessions: the
later ones are repetitions of the case and read the prefix the first one wrote.
The figure to reach (issue 36): with / without <= 0.4.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from skillbench.agents.builtin.loop import SkillInfo, run_agent
from skillbench.evals.model import Session
from skillbench.evals.skills import read_skill
from skillbench.models import resolve_model
from skillbench.models.anthropic_api import AnthropicModel
from skillbench.models.base import Completion, Model, Usage
from skillbench.models.fake_cache import anthropic_min_tokens
from skillbench.models.fake_server import SpawnedServer
from skillbench.models.pricing import price_for
from skillbench.models.script import parse_script
from skillbench.results.transcript import TraceWriter
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import stage_arm

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


class Recorded:
    """A model that keeps each call's usage (the session's turns, one by one)."""

    def __init__(self, model: Model):
        self.ref, self.model, self.usages = model.ref, model, list[Usage]()

    async def complete(self, **kwargs: Any) -> Completion:
        done = await self.model.complete(**kwargs)
        self.usages.append(done.usage)
        return done

    async def aclose(self) -> None:
        await self.model.aclose()


async def session(
    model: Model, provider: PodmanProvider, tmp: Path, n: int, turns: int
) -> list[Usage]:
    """One session's usage, turn by turn."""
    model = Recorded(model)
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
    return model.usages


ANTHROPIC = ["anthropic/claude-sonnet-4-6", "anthropic/claude-sonnet-4-5"]
OPENAI = ["openai/gpt-5", "openai/gpt-4.1"]


async def main(sessions: int, lengths: list[int]) -> None:
    provider = PodmanProvider()
    try:
        for turns in lengths:
            await measure(provider, sessions, turns)
    finally:
        await provider.aclose()


def ideal_anthropic(prompts: list[int], least: int) -> float:
    """Billed input of a cache with foresight: turn i reads the prompt turn i-1 wrote (when it
    was long enough to cache) at 0.1x and writes its news at 1.25x; the last turn writes
    nothing (nothing reads it); a prompt under the minimum is plain input."""
    billed, cached = 0.0, 0
    for i, prompt in enumerate(prompts):
        news = prompt - cached
        write = i < len(prompts) - 1 and prompt >= least
        billed += 0.1 * cached + (1.25 if write else 1.0) * news
        cached = prompt if write else 0
    return billed


def ideal_openai(prompts: list[int], rate: float) -> float:
    """Billed input if every prompt read all of the one before it that OpenAI can cache
    (from 1024 tokens, in 128-token steps) at `rate`."""
    billed, seen = 0.0, 0
    for prompt in prompts:
        read = seen - seen % 128 if seen >= 1024 else 0
        billed += rate * read + prompt - read
        seen = prompt
    return billed


async def measure(provider: PodmanProvider, sessions: int, turns: int) -> None:
    script = parse_script({"conversations": [{"steps": steps(turns)}]})
    server = SpawnedServer(msgspec.to_builtins(script))
    os.environ.update(server.env())
    tmp = Path(tempfile.mkdtemp(prefix="skillbench-bench-caching-"))
    print(f"billed input tokens of a {turns}-turn builtin session, fake server, {sessions}x")
    n = 0

    async def run(make: Callable[[], Model]) -> list[list[Usage]]:
        nonlocal n
        usages = []
        for _ in range(sessions):
            model = make()
            n += 1
            usages.append(await session(model, provider, tmp, n, turns))
            await model.aclose()
        return usages

    try:
        for ref in ANTHROPIC:
            least = anthropic_min_tokens(ref.split("/", 1)[1])
            # without first: its requests carry no breakpoint, so they leave nothing cached
            plain = await run(lambda ref=ref: AnthropicModel(ref, caching=False))
            cached = await run(lambda ref=ref: AnthropicModel(ref))
            without = [sum(u.input_tokens for u in s) for s in plain]
            with_ = [sum(billed_input(ref, u) for u in s) for s in cached]
            line(f"{ref} (min {least})", with_, without, ideal_anthropic(prompts(plain[0]), least))
        usages = await run(lambda: resolve_model(OPENAI[1]))  # the same prompts for both models
        without = [sum(u.input_tokens + u.cache_read_tokens for u in s) for s in usages]
        for ref in OPENAI:
            price = price_for(ref)
            assert price is not None and price.cache_read is not None
            rate = price.cache_read / price.input
            with_ = [sum(billed_input(ref, u) for u in s) for s in usages]
            line(
                f"{ref} (automatic, {rate:g}x)",
                with_,
                without,
                ideal_openai(prompts(usages[0]), rate),
            )
    finally:
        server.stop()


def prompts(usages: list[Usage]) -> list[int]:
    """Each turn's whole prompt, in tokens, from a session's per-turn usage."""
    return [u.input_tokens + u.cache_read_tokens + u.cache_write_tokens for u in usages]


def line(label: str, with_: list[float], without: list[float], ideal: float) -> None:
    """The first session's ratio (a cold cache: the figure judged) beside its ideal, then all
    sessions' (the later ones repeat the case and read what the first one wrote)."""
    cold, warm = with_[0] / without[0], sum(with_) / sum(without)
    verdict = "holds" if cold <= 0.4 else "misses"
    print(
        f"  {label:40} {cold:.3f}x cold (ideal {ideal / without[0]:.3f}x), "
        f"{warm:.3f}x over {len(with_)} sessions; target <= 0.4x {verdict}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--turns", default="5,10", help="session lengths, comma-separated")
    args = parser.parse_args()
    asyncio.run(main(args.sessions, [int(t) for t in args.turns.split(",")]))
