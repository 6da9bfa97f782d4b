"""Per-session cost of each agent: a one-case skill evaluated end to end (sandbox, staging,
the agent's session, the check phase) with the fake server answering instantly, so what is
measured is harness and agent overhead, not model time.

    .venv/bin/python bench/agents.py [--k N]

Figures, not assertions: the median wall time of a session as the journal records it, and
the run's wall time per session, for `builtin` and `claude-code` (the real CLI). Each agent
runs in its own scratch SKILLBENCH_HOME, so no session is served from an earlier run's reuse
cache and every run measures the same work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skillbench.models.fake_server import SpawnedServer

BASH = {"builtin": "bash", "claude-code": "Bash"}


def skill(root: Path, agent: str) -> Path:
    folder = root / agent / "lib" / "bench"
    (folder / "evals/cases").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: bench\ndescription: Benchmark skill.\n---\n")
    (folder / "evals/cases/one.yaml").write_text(
        "task: Write out.txt\nchecks: [{file_exists: out.txt}]\n"
    )
    (root / agent / "skillbench.toml").write_text(f'agent = "{agent}"\n')
    return folder


def run(agent: str, k: int, root: Path) -> tuple[list[float], float]:
    step = {"tool_calls": [{BASH[agent]: {"command": "echo x > out.txt"}}]}
    server = SpawnedServer(
        {"conversations": [{"when": "(?s)Write out.txt", "steps": [step, {"text": "done"}]}]}
    )
    try:
        out = root / agent / "run"
        env = {**os.environ, **server.env(), "SKILLBENCH_HOME": str(root / agent / "home")}
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "skillbench",
                "eval",
                str(skill(root, agent)),
                "--model",
                "anthropic/claude-sonnet-4-6",
                "--k",
                str(k),
                "--no-gen",
                "--quiet",
                "--parallel",
                "1",
                "--execution-only",
                "--out",
                str(out),
            ],
            env=env,
            capture_output=True,
        )
        if done.returncode not in (0, 1, 3):  # any verdict: a one-case run decides nothing
            raise SystemExit(f"{agent}: eval exited {done.returncode}: {done.stderr[-500:]!r}")
        wall = time.perf_counter() - started
    finally:
        server.stop()
    journal = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    seconds = [j["seconds"] for j in journal if j["type"] == "session"]
    return seconds, wall / len(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--k", type=int, default=3)
    k = parser.parse_args().k
    root = Path(tempfile.mkdtemp(prefix="skillbench-bench-agents-"))
    print(f"agents benchmark  {2 * k} one-turn sessions each, parallel 1, instant model")
    for agent in ("builtin", "claude-code"):
        seconds, per_session = run(agent, k, root)
        print(
            f"  {agent:12} agent session median {statistics.median(seconds) * 1000:7.0f} ms   "
            f"whole run per session {per_session * 1000:7.0f} ms"
        )


if __name__ == "__main__":
    main()
