"""The sequential stopping rule: its boundaries keep α exactly, a case stops only when its
vote is settled, and a small calibration run keeps false PASS within α."""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from fractions import Fraction
from pathlib import Path

from skillbench.engine.stats import ALPHA, sign_test
from skillbench.sequential import bounds, rule_for, settled

BENCH = Path(__file__).resolve().parents[1] / "bench" / "calibration.py"


def calibration():
    spec = importlib.util.spec_from_file_location("calibration", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["calibration"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_false_pass_under_aa_stays_within_alpha():
    sims = 400
    results = calibration().calibrate([10, 20], k=2, sims=sims, seed=7, lifts=[0.0])
    error = 3 * math.sqrt(ALPHA * (1 - ALPHA) / sims)  # three Monte-Carlo standard errors
    for (design, n, _), tally in results.items():
        assert tally.evals == sims
        assert tally.rate("PASS") <= ALPHA + error, (design, n, tally.verdicts)
        assert tally.rate("FAIL") <= ALPHA + error, (design, n, tally.verdicts)


def test_sequential_saves_sessions_when_the_candidate_is_clearly_better():
    results = calibration().calibrate([20], k=3, sims=200, seed=3, lifts=[0.6])
    seq, fix = results[("sequential", 20, 0.6)], results[("fixed", 20, 0.6)]
    assert seq.mean_sessions < 0.75 * fix.mean_sessions
    assert seq.rate("PASS") >= fix.rate("PASS") - 0.1


def crossing_chance(rule, decided):
    """Exact P(the leader crosses some look's boundary) under a fair coin, by enumeration."""
    found = bounds(rule, decided)
    hits = 0
    for votes in itertools.product((0, 1), repeat=decided[-1]):
        if any(c is not None and sum(votes[:d]) >= c for d, c in zip(decided, found, strict=True)):
            hits += 1
    return Fraction(hits, 2 ** decided[-1])


def test_boundaries_spend_no_more_than_alpha_whatever_is_decided_at_each_look():
    rule = rule_for(16, 0.2)
    assert rule.looks == [7, 10, 13, 16]
    for decided in ([7, 10, 13, 16], [5, 5, 9, 14], [6, 9, 9, 12], [0, 3, 8, 16]):
        assert crossing_chance(rule, decided) <= Fraction(ALPHA), decided


def test_the_last_look_alone_is_the_fixed_sign_test():
    rule = rule_for(12, 0.2)
    (last,) = bounds(rule.__class__(min_net_lift=0.2, looks=[12]), [12])
    assert sign_test(last, 12 - last) <= ALPHA < sign_test(last - 1, 13 - last)


def test_a_case_stops_only_when_its_vote_cannot_change():
    assert settled(["win", "win"], 3)  # 2 of 3 already
    assert not settled(["win", "loss"], 3)
    assert not settled(["win"], 3)
    assert not settled([None, "win"], 3)  # an unscored rep: the next two could still outvote
    assert settled(["win", "loss", "tie"], 3)  # all ran
    assert settled(["tie", "tie", "tie"], 5)
    assert not settled(["tie", "tie"], 5)
