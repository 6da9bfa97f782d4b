"""The uncertainty around a verdict (design §11): how many decided comparisons the sign test
would need, a bootstrap interval for the net lift, Wilson intervals for pass rates, and the
unbiased pass@k / pass^k estimators. Pure functions, no I/O."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import msgspec

ALPHA = 0.05
_Z = 1.959963984540054  # the two-sided 95 % normal quantile
_RESAMPLES = 2000
_MAX_NEEDED = 200  # beyond this, no eval anyone runs would decide it


class Interval(msgspec.Struct, frozen=True):
    """A point estimate with its 95 % interval."""

    value: float
    low: float
    high: float


class Stats(msgspec.Struct, frozen=True, kw_only=True):
    """The candidate against one opponent."""

    decided: int  # wins + losses
    needed: int | None  # decided comparisons the sign test needs at this split; None: > 200
    underpowered: bool
    sign_p: float
    net_lift_ci: Interval | None  # None when there are no rows
    pass_rate: dict[str, Interval | None]  # per arm: unit runs passed
    pass_at_k: dict[str, float] | None = None  # per arm, when k > 1
    pass_pow_k: dict[str, float] | None = None


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test over decisive rows (ties dropped)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def needed(wins: int, losses: int) -> int | None:
    """The fewest decided comparisons at which a split like this one (the same share for the
    leader, rounded in its favour) reaches p <= 0.05; at least 6, the all-one-way minimum.
    None when more than 200 would be needed (an even split never gets there)."""
    n = wins + losses
    lead = max(wins, losses) / n if n else 1.0
    if n and lead <= 0.5:
        return None
    for size in range(1, _MAX_NEEDED + 1):
        top = math.ceil(lead * size)
        if sign_test(top, size - top) <= ALPHA:
            return size
    return None


def wilson(passed: int, total: int) -> Interval | None:
    """The pass rate with its Wilson 95 % interval (None with nothing to count)."""
    if total == 0:
        return None
    p = passed / total
    centre = (p + _Z**2 / (2 * total)) / (1 + _Z**2 / total)
    half = _Z * math.sqrt(p * (1 - p) / total + _Z**2 / (4 * total**2)) / (1 + _Z**2 / total)
    # (at 0 or 1 passed the bounds meet the rate exactly; rounding must not cross it)
    return Interval(p, max(0.0, min(centre - half, p)), min(1.0, max(centre + half, p)))


def net_lift_ci(outcomes: Sequence[str], seed: int) -> Interval | None:
    """Net lift (W - L) / n with a 95 % percentile bootstrap interval over the rows, seeded so
    the same run gives the same interval."""
    if not outcomes:
        return None
    scores = [1 if o == "win" else -1 if o == "loss" else 0 for o in outcomes]
    n = len(scores)
    rng = random.Random(seed)
    lifts = sorted(sum(rng.choices(scores, k=n)) / n for _ in range(_RESAMPLES))
    point = sum(scores) / n
    low = lifts[int(0.025 * _RESAMPLES)]
    high = lifts[int(0.975 * _RESAMPLES) - 1]
    return Interval(point, min(low, point), max(high, point))


def pass_at_k(passes: Sequence[int], k: int) -> float:
    """Unbiased pass@k over units, each run k times with `passes[i]` passing (n = k): the
    chance that at least one of k runs passes."""
    return sum(1 - math.comb(k - c, k) / math.comb(k, k) for c in passes) / len(passes)


def pass_pow_k(passes: Sequence[int], k: int) -> float:
    """Unbiased pass^k over units: the chance that all k runs pass."""
    return sum(math.comb(c, k) / math.comb(k, k) for c in passes) / len(passes)
