"""The statistics around a verdict, against values computed by hand and properties that must
hold for any input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillbench.engine.stats import (
    needed,
    net_lift_ci,
    pass_at_k,
    pass_pow_k,
    sign_test,
    wilson,
)


@pytest.mark.parametrize(
    ("wins", "losses", "need"),
    [
        (3, 0, 6),  # all one way: 2 * 0.5**6 = 0.031 <= 0.05, while 0.5**4 = 0.0625 is not
        (0, 2, 6),  # the same for losses
        (0, 0, 6),  # nothing decided yet: the best case
        (3, 1, 15),  # 75 %: 12W/3L gives p = 2 * 576 / 2**15 = 0.035; 11W/3L at 14 gives 0.057
        (2, 2, None),  # an even split is never significant
        (7, 6, None),  # 54 %: more than 200 would be needed
    ],
)
def test_needed_by_hand(wins: int, losses: int, need: int | None) -> None:
    assert needed(wins, losses) == need


def test_wilson_by_hand() -> None:
    interval = wilson(8, 10)  # the textbook example: 0.8 with [0.490, 0.943]
    assert interval is not None
    assert (round(interval.value, 3), round(interval.low, 3), round(interval.high, 3)) == (
        0.8,
        0.49,
        0.943,
    )
    assert wilson(0, 0) is None
    zero = wilson(0, 5)
    assert zero is not None and zero.low == 0.0 and 0 < zero.high < 0.5


def test_pass_at_k_by_hand() -> None:
    # three units, k = 3: passes 0, 1 and 3 of 3 runs
    assert pass_at_k([0, 1, 3], 3) == pytest.approx(2 / 3)  # at least one pass
    assert pass_pow_k([0, 1, 3], 3) == pytest.approx(1 / 3)  # every run passes


def test_net_lift_interval_is_seeded_and_holds_the_estimate() -> None:
    rows = ["win"] * 5 + ["loss"] + ["tie"] * 3
    first, again = net_lift_ci(rows, 7), net_lift_ci(rows, 7)
    assert first == again and first is not None
    assert first.value == pytest.approx(4 / 9) and first.low < first.value < first.high
    assert net_lift_ci([], 7) is None
    solid = net_lift_ci(["win"] * 6, 1)
    assert solid is not None and (solid.low, solid.high) == (1.0, 1.0)


@settings(deadline=None)
@given(st.integers(0, 40), st.integers(0, 40))
def test_needed_is_minimal(wins: int, losses: int) -> None:
    need = needed(wins, losses)
    n = wins + losses
    lead = max(wins, losses) / n if n else 1.0
    if need is None:  # no size up to 200 reaches p <= 0.05 at this split
        assert all(
            sign_test(math.ceil(lead * m), m - math.ceil(lead * m)) > 0.05 for m in range(1, 201)
        )
        return
    top = math.ceil(lead * need)
    assert sign_test(top, need - top) <= 0.05  # enough...
    for smaller in range(1, need):  # ...and no fewer would do
        top = math.ceil(lead * smaller)
        assert sign_test(top, smaller - top) > 0.05


@given(st.integers(0, 50), st.integers(1, 50))
def test_wilson_contains_the_rate(passed: int, total: int) -> None:
    passed = min(passed, total)
    interval = wilson(passed, total)
    assert interval is not None
    assert 0.0 <= interval.low <= interval.value <= interval.high <= 1.0


@given(
    st.lists(st.sampled_from(["win", "loss", "tie"]), min_size=1, max_size=30),
    st.integers(0, 2**31),
)
def test_net_lift_interval_contains_the_estimate(rows: list[str], seed: int) -> None:
    interval = net_lift_ci(rows, seed)
    assert interval is not None
    assert -1.0 <= interval.low <= interval.value <= interval.high <= 1.0
