"""Simulated evals with known truth, run through the engine's own verdict and stopping
functions: what bench/calibration.py measures the designs with, and what `eval --plan`
estimates a sequential run's expected sessions from.

Each simulated eval has n cases. A case has a baseline pass probability drawn uniformly from
[0.1, 0.9] and a candidate one of baseline + the case's lift (the true net lift plus a
per-case spread of 0.15, clipped to [0, 1]); every repetition of the case draws from the
same two probabilities, so repetitions are correlated within a case. A repetition is a win
(candidate passed, baseline failed), a loss, or a tie; a tie goes to a noisy judge that
picks a side at random a quarter of the time. The fixed design's rows go through
`skillbench.results.verdict.decide`; the sequential one follows the engine's schedule (`settled`
between waves of repetitions) and its stopping rule (`rule_for`, `stop_of`), the functions
the gate re-derives stops with.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from skillbench.results.sequential import rule_for, settled, stop_of
from skillbench.results.verdict import MIN_NET_LIFT, Row, decide

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
        stop = None
        while stop is None and (undecided := [i for i in group if not settled(reps[i], k)]):
            for i in undecided:  # one wave: the next repetition of every undecided case
                result = outcome(rng, *cases[i])
                reps[i].append(result)
                rows.append(row(i, len(reps[i]), result))
            stop = stop_of(rows, rule, "baseline", order, j + 1, k)  # curtailed, perhaps
        start = units
        if stop is not None:
            return stop.verdict, ARMS * len(rows)
    raise AssertionError("the last look always stops")


def expected_sessions(stimuli: int, k: int, lift: float, sims: int = 200) -> float:
    """The mean sessions per case-repetition pair a sequential run spends, as a share of the
    fixed design's, at a true net lift (seeded: the same plan gives the same figure)."""
    rng = random.Random(f"plan/{stimuli}/{k}/{lift}")
    spent = sum(sequential(rng, truth(rng, stimuli, lift), k)[1] for _ in range(sims))
    return spent / (sims * ARMS * stimuli * k)
