"""The verdict rule (docs/statistics.md), in one place: the engine scores with it, the gate
re-derives a receipt's verdict with it. Pure functions of rows.

The unit of evidence is the stimulus, not the row: a case is one vote (the majority over its
repetitions), and a suite is one vote (the net of its sub-cases within each session, then the
majority over repetitions), because rows that share a stimulus or a session are not
independent. Fewer than 5 decided votes is INCONCLUSIVE; otherwise a one-sided exact sign test
in the observed direction and a practical floor on the net lift decide PASS or FAIL, and
anything short of both is NEUTRAL.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from fractions import Fraction
from typing import Annotated, Literal, Protocol

import msgspec

from skillbench.results.stats import ALPHA, MIN_DECIDED, sign_test

# The verdicts a run can reach (docs/statistics.md), typed wherever one is read or written
# (summary.json, receipts) so a word skillbench never writes is refused there.
Verdict = Literal["PASS", "NEUTRAL", "FAIL", "INCONCLUSIVE", "NONE"]
NONE: Verdict = "NONE"  # the verdict of a run that scored nothing: it measured nothing
INCONCLUSIVE: Verdict = "INCONCLUSIVE"  # too few decided units for any verdict
# repetitions of a case: a plan, a summary or a receipt naming more is refused where it is read
# (a receipt's k of 10**11 made the gate build a list that long)
MAX_K = 100
Repetitions = Annotated[int, msgspec.Meta(ge=1, le=MAX_K)]

MIN_NET_LIFT = 0.2  # the practical floor on the net lift (dotnet/skills' gate uses the same)
# Rows that say nothing about the skill: an arm errored, the judge could not answer, or a
# deciding check could not run in either arm (the image lacks what it runs).
UNSCORED = frozenset(
    {"unscored", "judge-refused", "judge-unparseable", "judge-error", "environment-gap"}
)
# A row's outcome, from the candidate's side; "unscored" only on an UNSCORED row. Typed at
# every boundary (receipt rows, journal lines) so a foreign word is refused there, not a
# KeyError in the tally.
Outcome = Literal["win", "loss", "tie", "unscored"]
_SCORE = {"win": 1, "loss": -1, "tie": 0}


class RowLike(Protocol):
    """What the verdict reads of a row: RowRecord, RowSummary and `Row` all have it."""

    @property
    def case(self) -> str: ...

    @property
    def rep(self) -> int: ...

    @property
    def opponent(self) -> str: ...

    @property
    def outcome(self) -> str: ...

    @property
    def decided_by(self) -> str: ...


class Row(msgspec.Struct, frozen=True):
    """A receipt's row as the verdict reads it (`msgspec.convert(receipt.rows, list[Row])`;
    the other keys are ignored)."""

    case: str
    rep: int
    opponent: str
    outcome: str  # win | loss | tie, from the candidate's side
    decided_by: str


class Votes(msgspec.Struct, frozen=True):
    """One vote per independent unit, from the candidate's side."""

    win: int = 0
    loss: int = 0
    tie: int = 0

    @property
    def decided(self) -> int:
        return self.win + self.loss

    @property
    def total(self) -> int:
        return self.win + self.loss + self.tie

    @property
    def net_lift(self) -> float | None:
        return (self.win - self.loss) / self.total if self.total else None


def stimulus(case: str) -> str:
    """The unit a row belongs to: its case, or for a suite sub-case (`suite/<name>`) the
    suite, whose sub-cases share one session."""
    return case.split("/", 1)[0]


def unit_votes(rows: Iterable[RowLike], opponent: str) -> dict[str, str]:
    """Each scored unit's vote against `opponent` (win | loss | tie), by unit name, sorted.
    Per repetition: the sign of the unit's scored rows' net (one row for a case, every
    sub-case for a suite). Then the majority over repetitions: the outcome most of them had,
    a tie when none leads. Unscored rows are no evidence; a unit with none scored has no vote."""
    net: dict[tuple[str, int], int] = {}
    for row in rows:
        if row.opponent != opponent or row.decided_by in UNSCORED:
            continue
        key = (stimulus(row.case), row.rep)
        net[key] = net.get(key, 0) + _SCORE[row.outcome]
    reps: dict[str, Counter[str]] = {}
    for (unit, _), value in sorted(net.items()):
        outcome = "win" if value > 0 else "loss" if value < 0 else "tie"
        reps.setdefault(unit, Counter())[outcome] += 1
    votes = {}
    for unit, counts in sorted(reps.items()):
        (top, n), *rest = counts.most_common()
        votes[unit] = "tie" if rest and rest[0][1] == n else top
    return votes


def tally(rows: Iterable[RowLike], opponent: str) -> Votes:
    """The votes of every scored unit against `opponent`."""
    counts = Counter(unit_votes(rows, opponent).values())
    return Votes(counts["win"], counts["loss"], counts["tie"])


def verdict_of(votes: Votes, min_net_lift: float = MIN_NET_LIFT) -> Verdict:
    """NONE with no unit scored; INCONCLUSIVE under 5 decided units, whatever the split;
    PASS (FAIL) when the one-sided sign test in the observed direction reaches p <= 0.05 and
    the net lift is at least `min_net_lift` for (against) the candidate; else NEUTRAL."""
    if votes.total == 0:
        return NONE
    if votes.decided < MIN_DECIDED:
        return INCONCLUSIVE
    if sign_test(votes.win, votes.loss) > ALPHA:
        return "NEUTRAL"
    # in exact fractions: a floor of 0.2 over 5 units must mean exactly 1/5
    lift, floor = Fraction(votes.win - votes.loss, votes.total), Fraction(str(min_net_lift))
    if lift > 0 and lift >= floor:
        return "PASS"
    if lift < 0 and -lift >= floor:
        return "FAIL"
    return "NEUTRAL"


def decide(rows: Iterable[RowLike], opponent: str, min_net_lift: float = MIN_NET_LIFT) -> Verdict:
    """The verdict of the candidate against `opponent` from rows alone."""
    return verdict_of(tally(rows, opponent), min_net_lift)
