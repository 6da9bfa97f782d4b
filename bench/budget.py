"""The run-wide --max-cost under --parallel 8 with a CLI agent: how far past the ceiling the
run spends, as a ratio to the price of the calls in flight when the ceiling was reached.

    .venv/bin/python bench/budget.py [--ceiling USD]

An eval of one case, 4 repetitions x 2 arms = 8 Claude Code sessions at once in
real podman sandboxes, against the fake server (each call 0.5 s). Every call of every session
reserves its worst case in the run's ledger before the broker forwards it, so the figure to
reach (issue 36) is overshoot <= the price of the calls in flight; by construction it is 0.
The calls in flight are counted as those answered after the first refusal (an upper bound).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from skillbench.cli import main as cli
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.script import parse_script

TASK = "Create hello.txt"


def run(ceiling: float) -> None:
    step = {"tool_calls": [{"Bash": {"command": "echo hi > hello.txt"}}]}
    script = {
        "latency": 0.5,
        "conversations": [{"when": f"(?s).*{TASK}", "steps": [step, {"text": "done"}]}],
    }
    server = FakeModelServer(parse_script(script)).start()
    os.environ.update(server.env())
    tmp = Path(tempfile.mkdtemp(prefix="skillbench-bench-budget-"))
    skill = tmp / "lib" / "greeter"
    (skill / "evals" / "cases").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greeter\ndescription: Greets people politely.\n---\nSay hello.\n"
    )
    (skill / "evals/cases/hello.yaml").write_text(
        f"task: {TASK}\nchecks: [{{file_exists: hello.txt}}]\n"
    )
    (tmp / "skillbench.toml").write_text('agent = "claude-code"\nmax_retries = 1\n')
    os.chdir(tmp)  # settings come from where skillbench runs (at or above it), not the skill's
    model = "anthropic/claude-sonnet-4-6"
    out = tmp / "run"
    try:
        cli(
            [
                *("eval", str(skill), "--model", model, "--out", str(out), "--quiet"),
                *("--no-gen", "--execution-only", "--k", "4", "--parallel", "8"),
                *("--max-cost", str(ceiling)),
            ]
        )
    finally:
        server.stop()
    calls = [
        json.loads(line)
        for path in (out / "exchanges").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    spent = sum(c.get("cost_usd") or 0.0 for c in calls)
    refusals = sorted(c["at"] for c in calls if "cannot cover" in str(c))
    first = refusals[0] if refusals else float("inf")
    in_flight = sum(
        c.get("cost_usd") or 0.0 for c in calls if c["status"] == 200 and c["at"] > first
    )
    overshoot = max(0.0, spent - ceiling)
    sessions = len(list((out / "exchanges").glob("*.jsonl")))
    print(f"--max-cost under --parallel 8, claude-code, {sessions} sessions, fake server")
    print(f"  ceiling ${ceiling:.2f}  spent ${spent:.4f}  refused calls {len(refusals)}")
    print(f"  calls in flight at the first refusal: ${in_flight:.4f} (answered after it)")
    ratio = overshoot / in_flight if in_flight else 0.0
    print(f"  overshoot ${overshoot:.4f} = {ratio:.2f}x the price of the calls in flight (<= 1)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ceiling", type=float, default=1.2)
    args = parser.parse_args()
    run(args.ceiling)
