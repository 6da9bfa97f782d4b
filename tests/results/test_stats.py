"""The statistics around a verdict, against values computed by hand and properties that must
hold for any input."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillbench.results.stats import cluster_ci, needed, pass_at_k, pass_pow_k, sign_test


@pytest.mark.parametrize(
    ("wins", "losses", "p"),
    [
        (5, 0, 1 / 32),  # the fewest unanimous votes that are significant...
        (4, 0, 1 / 16),  # ...and one fewer is not
        (0, 5, 1 / 32),  # in the observed direction: losses alike
        (5, 1, 7 / 64),  # P(X >= 5 | 6) = (6 + 1) / 64
        (3, 3, 42 / 64),  # P(X >= 3 | 6) = (20 + 15 + 6 + 1) / 64
        (10, 2, 79 / 4096),  # (66 + 12 + 1) / 4096
        (0, 0, 1.0),
    ],
)
def test_one_sided_sign_test_by_hand(wins: int, losses: int, p: float) -> None:
    assert sign_test(wins, losses) == pytest.approx(p)


@pytest.mark.parametrize(
    ("wins", "losses", "need"),
    [
        (3, 0, 5),  # all one way: 0.5**5 = 0.031 <= 0.05, while 0.5**4 = 0.0625 is not
        (0, 2, 5),  # the same for losses
        (0, 0, 5),  # nothing decided yet: the best case
        (3, 1, 11),  # 75 %: 9W/2L gives 67 / 2048 = 0.033; 8W/2L at 10 gives 56 / 1024 = 0.055
        (9, 3, 11),  # the same share: 9 of 12 scales exactly (a float would round it to 10)
        (4, 1, 8),  # 80 %: 7W/1L gives 9 / 256 = 0.035; 6W/1L at 7 gives 8 / 128 = 0.0625
        (2, 2, None),  # an even split is never significant
        (7, 6, None),  # 54 %: more than 200 would be needed
    ],
)
def test_needed_by_hand(wins: int, losses: int, need: int | None) -> None:
    assert needed(wins, losses) == need


def test_pass_at_k_by_hand() -> None:
    # three units, k = 3: passes 0, 1 and 3 of 3 runs
    assert pass_at_k([0, 1, 3], 3) == pytest.approx(2 / 3)  # at least one pass
    assert pass_pow_k([0, 1, 3], 3) == pytest.approx(1 / 3)  # every run passes


def test_the_cluster_bootstrap_moves_whole_units() -> None:
    # Two units of four rows each, one all wins and one all losses: the net lift is 0, and
    # a resample holds both units (0), or one twice (+1 or -1) a quarter of the time each.
    # A bootstrap over the eight rows would call the interval narrow; over units it is not.
    interval = cluster_ci([(4, 4), (-4, 4)], 7)
    assert interval is not None and (interval.value, interval.low, interval.high) == (0, -1, 1)
    assert cluster_ci([(4, 4), (-4, 4)], 7) == interval  # seeded: the same run, the same CI
    assert cluster_ci([], 7) is None
    solid = cluster_ci([(1, 1)] * 6, 1)
    assert solid is not None and (solid.low, solid.high) == (1.0, 1.0)
    # a ratio: 3 of 4 runs passed in one unit, 1 of 2 in the other
    rate = cluster_ci([(3, 4), (1, 2)], 3)
    assert rate is not None and rate.value == pytest.approx(4 / 6)
    assert rate.low == pytest.approx(1 / 2) and rate.high == pytest.approx(3 / 4)


@settings(deadline=None)
@given(st.integers(0, 40), st.integers(0, 40))
def test_needed_is_minimal(wins: int, losses: int) -> None:
    need = needed(wins, losses)
    n = wins + losses
    lead = Fraction(max(wins, losses), n) if n else Fraction(1)
    if need is None:  # no size up to 200 reaches p <= 0.05 at this split
        assert all(
            sign_test(math.ceil(lead * m), m - math.ceil(lead * m)) > 0.05 for m in range(1, 201)
        )
        return
    assert need >= 5  # below five decided units nothing is significant
    top = math.ceil(lead * need)
    assert sign_test(top, need - top) <= 0.05  # enough...
    for smaller in range(1, need):  # ...and no fewer would do
        top = math.ceil(lead * smaller)
        assert sign_test(top, smaller - top) > 0.05


@settings(deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-5, 5), st.integers(1, 5)).map(lambda t: (max(-t[1], t[0]), t[1])),
        min_size=1,
        max_size=30,
    ),
    st.integers(0, 2**31),
)
def test_a_cluster_interval_contains_the_estimate(
    clusters: list[tuple[int, int]], seed: int
) -> None:
    clusters = [(min(n, d), d) for n, d in clusters]  # each unit's ratio lies in [-1, 1]
    interval = cluster_ci(clusters, seed)
    assert interval is not None
    assert -1.0 <= interval.low <= interval.value <= interval.high <= 1.0
