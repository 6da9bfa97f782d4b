"""The verdict rule (design §3), in one place: the engine scores with it, the gate reads
receipts with it."""

from __future__ import annotations

NONE = "NONE"  # the verdict of a run that scored nothing: it measured nothing


def verdict_of(win: int, loss: int, tie: int) -> str:
    """PASS if net lift >= +1/3, FAIL if <= -1/3, else NEUTRAL, in integers; NONE when there
    is nothing to judge."""
    total = win + loss + tie
    if total == 0:
        return NONE
    if 3 * (win - loss) >= total:
        return "PASS"
    if 3 * (win - loss) <= -total:
        return "FAIL"
    return "NEUTRAL"
