"""Calibration of the verdict, fixed and sequential, by simulation with known truth.

Each simulated eval has n cases. A case has a baseline pass probability drawn uniformly from
[0.1, 0.9] and a candidate one of baseline + the case's lift (the true net lift plus a
per-case spread of 0.15, clipped to [0, 1]); every repetition of the case draws from the
same two probabilities, so repetitions are correlated within a case. A repetition is a win
(candidate passed, baseline failed), a loss, or a tie; a tie goes to a noisy judge that
picks a side at random a quarter of the time. The rows go through the engine's own
functions: `skillbench.verdict.decide` for the fixed design, and for the sequential one
the engine's scheduling rule (`settled` between waves of repetitions) and its stopping rule
(`rule_for`, `stop_of`), the same functions the gate re-derives stops with.

Printed per design and size: false PASS and false FAIL under A/A (true lift 0), power
(PASS rate) at net lifts 0.2, 0.4 and 0.6, sessions per verdict, the INCONCLUSIVE rate, and
the sequential design's ratios to the fixed one.

    .venv/bin/python bench/calibration.py [--sims N] [--k K] [--sizes 3 5 10 20 40]
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from skillbench.sequential import rule_for, settled, stop_of
from skillbench.verdict import MIN_NET_LIFT, Row, decide

LIFTS = (0.0, 0.2, 0.4, 0.6)
SPREAD = 0.15  # per-case spread of the true lift
JUDGE_DECIDES = 0.25  # a tie the judge turns into a (random) win or loss
ARMS = 2  # sessions per case-repetition: candidate and baseline


@dataclass
class Tally:
    """Outcomes of the simulated evals of one (design, size, lift)."""

    evals: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    sessions: int = 0

    def add(self, verdict: str, sessions: int) -> None:
        self.evals += 1
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
        self.sessions += sessions

    def rate(self, verdict: str) -> float:
        return self.verdicts.get(verdict, 0) / self.evals

    @property
    def mean_sessions(self) -> float:
        return self.sessions / self.evals


def truth(rng: random.Random, n: int, lift: float) -> list[tuple[float, float]]:
    """Per case: (baseline, candidate) pass probabilities with mean difference `lift`."""
    cases = []
    for _ in range(n):
        base = rng.uniform(0.1, 0.9)
        delta = 0.0 if lift == 0 else rng.gauss(lift, SPREAD)
        cases.append((base, min(1.0, max(0.0, base + delta))))
    return cases


def outcome(rng: random.Random, base: float, cand: float) -> str:
    """One repetition's row, from the candidate's side."""
    b, c = rng.random() < base, rng.random() < cand
    if c != b:
        return "win" if c else "loss"
    if rng.random() < JUDGE_DECIDES:
        return rng.choice(("win", "loss"))
    return "tie"


def row(case: int, rep: int, result: str) -> Row:
    return Row(f"c{case}", rep, "baseline", result, "checks" if result != "tie" else "tie")


def fixed(rng: random.Random, cases: Sequence[tuple[float, float]], k: int) -> tuple[str, int]:
    rows = [
        row(i, rep, outcome(rng, b, c)) for i, (b, c) in enumerate(cases) for rep in range(1, k + 1)
    ]
    return decide(rows, "baseline", MIN_NET_LIFT), ARMS * len(rows)


def sequential(rng: random.Random, cases: Sequence[tuple[float, float]], k: int) -> tuple[str, int]:
    """The engine's sequential schedule: look by look, repetitions in waves while a case's
    vote can still change; stop where the rule says."""
    rule = rule_for(len(cases), MIN_NET_LIFT)
    order = [f"c{i}" for i in range(len(cases))]
    rows: list[Row] = []
    reps: dict[int, list[str | None]] = {}
    start = 0
    for j, units in enumerate(rule.looks):
        group = range(start, units)
        for i in group:
            reps[i] = []
        while undecided := [i for i in group if not settled(reps[i], k)]:
            for i in undecided:  # one wave: the next repetition of every undecided case
                result = outcome(rng, *cases[i])
                reps[i].append(result)
                rows.append(row(i, len(reps[i]), result))
        start = units
        stop = stop_of(rows, rule, "baseline", order, j + 1)
        if stop is not None:
            return stop.verdict, ARMS * len(rows)
    raise AssertionError("the last look always stops")


def calibrate(
    sizes: Sequence[int], k: int, sims: int, seed: int = 1, lifts: Sequence[float] = LIFTS
) -> dict[tuple[str, int, float], Tally]:
    out: dict[tuple[str, int, float], Tally] = {}
    for n in sizes:
        for lift in lifts:
            for design, run in (("fixed", fixed), ("sequential", sequential)):
                rng = random.Random(f"{seed}/{n}/{lift}")  # the same truths for both designs
                tally = out.setdefault((design, n, lift), Tally())
                for _ in range(sims):
                    tally.add(*run(rng, truth(rng, n, lift), k))
    return out


def table(results: dict[tuple[str, int, float], Tally], sizes: Sequence[int], sims: int) -> str:
    se = math.sqrt(0.05 * 0.95 / sims)
    lines = [
        f"{sims} simulated evals per cell; Monte-Carlo standard error at 0.05: {se:.4f}",
        f"{'design':<11}{'cases':>6}{'fPASS':>7}{'fFAIL':>7}{'pw0.2':>7}{'pw0.4':>7}"
        f"{'pw0.6':>7}{'incl':>6}{'sess@0':>8}{'sess@.4':>8}{'sess@.6':>8}",
    ]
    for design in ("fixed", "sequential"):
        for n in sizes:
            aa = results[(design, n, 0.0)]
            lines.append(
                f"{design:<11}{n:>6}{aa.rate('PASS'):>7.3f}{aa.rate('FAIL'):>7.3f}"
                + "".join(f"{results[(design, n, x)].rate('PASS'):>7.3f}" for x in (0.2, 0.4, 0.6))
                + f"{aa.rate('INCONCLUSIVE'):>6.2f}"
                + "".join(f"{results[(design, n, x)].mean_sessions:>8.1f}" for x in (0.0, 0.4, 0.6))
            )
    lines.append("sequential / fixed (sessions per verdict; power difference):")
    for n in sizes:
        parts = []
        for x in LIFTS:
            seq, fix = results[("sequential", n, x)], results[("fixed", n, x)]
            ratio = seq.mean_sessions / fix.mean_sessions
            parts.append(
                f"lift {x}: {ratio:.2f}x"
                + (f" (power {seq.rate('PASS') - fix.rate('PASS'):+.3f})" if x else "")
            )
        lines.append(f"  {n:>3} cases  " + " · ".join(parts))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 5, 10, 20, 40])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    results = calibrate(args.sizes, args.k, args.sims, args.seed)
    print(f"k = {args.k} repetitions per case")
    print(table(results, args.sizes, args.sims))


if __name__ == "__main__":
    main()
