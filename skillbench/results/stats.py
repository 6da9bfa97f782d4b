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


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided exact p of the 2×2 table [[a, b], [c, d]] (Fisher's test): the chance, with
    the margins fixed, of a table no likelier than this one. Tables within a relative 1e-7 of
    the observed probability count as equally likely (R's fisher.test does the same), so
    floating-point noise never drops the observed table's mirror image."""
    row, col, n = a + b, a + c, a + b + c + d
    low, high = max(0, col - (n - row)), min(row, col)
    if low == high:
        return 1.0

    def prob(x: int) -> Fraction:  # the hypergeometric chance of x in the top-left cell
        return Fraction(math.comb(row, x) * math.comb(n - row, col - x), math.comb(n, col))

    observed = prob(a)
    cutoff = observed * Fraction(1 + 10**-7)
    return min(1.0, float(sum(p for x in range(low, high + 1) if (p := prob(x)) <= cutoff)))


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of p-values, in the given order: each adjusted p is at least
    the one before it in ascending order, and rejecting where it is <= ALPHA keeps the chance
    of any false flag among them at ALPHA."""
    order = sorted(range(len(ps)), key=ps.__getitem__)
    adjusted = [1.0] * len(ps)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def heterogeneity(votes: Sequence[tuple[int, int]]) -> list[float | None]:
    """Which cells' decided units (wins, losses against the baseline) split differently from
    the other cells'? (docs/statistics.md, "Where the skill helps".) Each cell is set against
    the pooled rest with Fisher's exact test, Holm-adjusted over the cells; the one most
    unlike the rest, when its adjusted p <= ALPHA, is flagged and set aside, and the cells left
    are tested again among themselves, until none differs or fewer than two remain. So one
    outlier is flagged alone, not also the cells it pulled the pooled rest away from. Returns
    each cell's adjusted p where it was flagged, None where it was not."""
    flagged: list[float | None] = [None] * len(votes)
    left = [i for i, (w, lo) in enumerate(votes) if w + lo]
    while len(left) >= 2:
        wins = sum(votes[i][0] for i in left)
        losses = sum(votes[i][1] for i in left)
        ps = holm(
            [
                fisher_exact(votes[i][0], votes[i][1], wins - votes[i][0], losses - votes[i][1])
                for i in left
            ]
        )
        best = min(range(len(left)), key=ps.__getitem__)
        if ps[best] > ALPHA:
            break
        flagged[left.pop(best)] = ps[best]
    return flagged
