"""The uncertainty around a verdict (docs/statistics.md): the one-sided exact sign test over
independent units, how many decided units it would need, cluster-bootstrap intervals, and the
unbiased pass@k / pass^k estimators. Pure functions, no I/O."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from fractions import Fraction

import msgspec

ALPHA = 0.05
MIN_DECIDED = 5  # 5 unanimous votes: 1/32 <= 0.05 one-sided; 4 give 1/16, never significant
_RESAMPLES = 2000
_MAX_NEEDED = 200  # beyond this, no eval anyone runs would decide it


class Interval(msgspec.Struct, frozen=True):
    """A point estimate with its 95 % interval."""

    value: float
    low: float
    high: float


class Stats(msgspec.Struct, frozen=True, kw_only=True):
    """The candidate against one opponent, counted in independent units (docs/statistics.md)."""

    decided: int  # units won plus units lost
    needed: int | None  # decided units the sign test needs at this split; None: > 200
    underpowered: bool
    sign_p: float
    net_lift_ci: Interval | None  # over units; None when no unit was scored
    pass_rate: dict[str, Interval | None]  # per arm: unit runs passed, resampled by stimulus
    pass_at_k: dict[str, float] | None = None  # per arm, when k > 1
    pass_pow_k: dict[str, float] | None = None


def sign_test(wins: int, losses: int) -> float:
    """One-sided exact sign test in the observed direction (ties dropped): the chance of a
    lead at least this large if wins and losses were equally likely."""
    n = wins + losses
    if n == 0:
        return 1.0
    lead = max(wins, losses)
    return min(1.0, sum(math.comb(n, i) for i in range(lead, n + 1)) / 2**n)


def needed(wins: int, losses: int) -> int | None:
    """The fewest decided units at which a split like this one (the same share for the
    leader, rounded in its favour) reaches p <= 0.05; at least 5, the all-one-way minimum.
    None when more than 200 would be needed (an even split never gets there)."""
    n = wins + losses
    # exact: 9 of 12 must scale to 9 of 12, not to the 10 a float's rounding gives
    lead = Fraction(max(wins, losses), n) if n else Fraction(1)
    if lead <= Fraction(1, 2):
        return None
    for size in range(1, _MAX_NEEDED + 1):
        top = math.ceil(lead * size)
        if sign_test(top, size - top) <= ALPHA:
            return size
    return None


def cluster_ci(clusters: Sequence[tuple[float, int]], seed: int) -> Interval | None:
    """A ratio over independent units (the sum of their numerators over the sum of their
    denominators) with a 95 % percentile cluster bootstrap: whole units are drawn with
    replacement, never the rows inside one, so rows that share a stimulus move together.
    Seeded, so the same run gives the same interval. Every denominator is at least 1."""
    if not clusters:
        return None
    nums = [n for n, _ in clusters]
    dens = [d for _, d in clusters]
    point = sum(nums) / sum(dens)
    rng = random.Random(seed)
    picks = range(len(clusters))
    ratios = []
    for _ in range(_RESAMPLES):
        drawn = rng.choices(picks, k=len(clusters))
        ratios.append(sum(map(nums.__getitem__, drawn)) / sum(map(dens.__getitem__, drawn)))
    ratios.sort()
    low = ratios[int(0.025 * _RESAMPLES)]
    high = ratios[int(0.975 * _RESAMPLES) - 1]
    return Interval(point, min(low, point), max(high, point))


def pass_at_k(passes: Sequence[int], k: int) -> float:
    """Unbiased pass@k over units, each run k times with `passes[i]` passing (n = k): the
    chance that at least one of k runs passes."""
    return sum(1 - math.comb(k - c, k) / math.comb(k, k) for c in passes) / len(passes)


def pass_pow_k(passes: Sequence[int], k: int) -> float:
    """Unbiased pass^k over units: the chance that all k runs pass."""
    return sum(math.comb(c, k) / math.comb(k, k) for c in passes) / len(passes)
