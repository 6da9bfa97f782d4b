"""Sequential stopping (docs/eval.md): a group-sequential exact sign test over
stimuli, declared before the first session, so a run stops as soon as its verdict is settled.

The stimuli (cases, and the suite) are looked at in plan order, in groups: look j covers the
first `looks[j]` of them. Within a look, repetitions run in waves, and a stimulus gets
another repetition only while its vote (the majority over its repetitions) can still change
(`settled`: exact). At each look the votes so far meet that look's boundary: the smallest
leader count at which the exact chance, under no difference, of a first crossing by then
stays within the one-sided α spent by then (a Lan–DeMets spending function over the share
of stimuli looked at). The run stops at the first look where the leader crosses and the net
lift clears the practical floor (PASS or FAIL); at the last look without a crossing the
verdict is NEUTRAL (INCONCLUSIVE under 5 decided votes, NONE with nothing scored). It also
stops early, without a verdict beyond NEUTRAL / INCONCLUSIVE, at a look where neither side
could reach the last look's boundary even with every remaining stimulus (futility). And it
stops between waves, before a look's votes are all settled, once every way the repetitions
still to run could end gives the same stop at that look (curtailment: exact, so it never
changes a verdict and cannot raise an error rate).

Pure functions; the engine schedules with them and the gate re-derives every stop with them.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from fractions import Fraction
from statistics import NormalDist
from typing import Literal

import msgspec

from skillbench.results.stats import ALPHA, MIN_DECIDED
from skillbench.results.verdict import (
    INCONCLUSIVE,
    NONE,
    UNSCORED,
    RowLike,
    Verdict,
    Votes,
    stimulus,
    unit_votes,
)

LOOK_FRACTIONS = (0.4, 0.6, 0.8, 1.0)  # where the looks fall, as shares of the stimuli
SPENDING = (
    "pocock"  # measured by bench/calibration.py: early looks stop more than O'Brien–Fleming's
)
MIN_FIRST_LOOK = 5  # fewer votes can never cross any boundary: no look before 5 stimuli
# curtailment enumerates the vote totals the open stimuli can still reach (cubic in their
# number); with more open than this the look runs its waves to the end instead
MAX_OPEN = 60
# the most stimuli a rule looks at: its exact boundaries cost time that grows with the
# square of the votes (2 s a look at 1,000), and a receipt or plan.json names them
MAX_STIMULI = 1000


class Rule(msgspec.Struct, frozen=True, kw_only=True):
    """The stopping rule of a sequential run, written to plan.json before the first session
    and into the receipt, so the gate re-derives every stop from it. `looks`: after how many
    stimuli (in plan order) each analysis falls; the last is all of them."""

    alpha: float = ALPHA
    spending: str = SPENDING
    min_net_lift: float
    looks: list[int]

    def __post_init__(self) -> None:
        # read from plan.json and receipts, files a run or a PR may hand us: a rule its own
        # functions cannot compute with is refused where it is decoded, never a traceback
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha {self.alpha} is not between 0 and 1")
        if self.spending not in ("pocock", "obrien-fleming"):
            raise ValueError(f"spending {self.spending[:40]!r} is not pocock or obrien-fleming")
        if not 0 <= self.min_net_lift <= 1:
            raise ValueError(f"min_net_lift {self.min_net_lift} is not between 0 and 1")
        if not self.looks or self.looks[0] < 1 or self.looks != sorted(set(self.looks)):
            raise ValueError(f"looks {self.looks[:8]} are not increasing counts from 1")
        if len(self.looks) > len(LOOK_FRACTIONS) or self.looks[-1] > MAX_STIMULI:
            raise ValueError(
                f"looks {self.looks[:8]}: at most {len(LOOK_FRACTIONS)} looks at up to "
                f"{MAX_STIMULI} stimuli"
            )


class Stop(msgspec.Struct, frozen=True):
    """Where a sequential run stopped and why, with the boundary of every look it made (the
    leader's count that crossed, given the decided votes then; None: unreachable)."""

    look: int  # 1-based index into the rule's looks
    units: int  # stimuli the verdict counts
    # curtailed: stopped with votes still open, as every way they could end stops here alike
    reason: Literal["boundary", "futility", "final", "curtailed"]
    verdict: Verdict
    decided: list[int]  # decided votes at each look made
    bounds: list[int | None]


def spent(t: float, alpha: float = ALPHA, spending: str = SPENDING) -> Fraction:
    """Lan–DeMets spending functions, Pocock-like (α·ln(1 + (e − 1)t)) or O'Brien–Fleming-like:
    the one-sided α spent by information t (the share of stimuli looked at), as the exact
    fraction of its float, so that the engine and the gate compare the same numbers."""
    if t >= 1:
        return Fraction(alpha)
    if spending == "pocock":
        return Fraction(alpha * math.log(1 + (math.e - 1) * t))
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return Fraction(min(alpha, 2 * (1 - NormalDist().cdf(z / math.sqrt(t)))))


def bounds(rule: Rule, decided: Sequence[int]) -> list[int | None]:
    """The exact boundary of each look made so far, given the decided votes at each (see
    _bounds; remembered, as curtailment asks for the same ones many times over)."""
    return list(_bounds(rule.alpha, rule.spending, tuple(rule.looks), tuple(decided)))


@functools.lru_cache(maxsize=4096)
def _bounds(
    alpha: float, spending: str, looks: tuple[int, ...], decided: tuple[int, ...]
) -> tuple[int | None, ...]:
    """The exact boundary of each look made so far, given the decided votes at each.

    Under no difference every decided vote is a fair coin, whenever it was decided, so the
    leader's count is a random walk over the decided votes. Look j's boundary is the
    smallest count at which the chance of a first crossing at any look up to j stays within
    the α spent by j; the same holds for the other side, so false PASS and false FAIL are
    each at most α, whatever the number of votes decided at each look."""
    stimuli = looks[-1]
    dist = [Fraction(1)]  # P(leader count = w and no crossing so far)
    crossed, before = Fraction(0), 0
    out: list[int | None] = []
    for units, d in zip(looks, decided, strict=False):
        fresh = d - before
        before = d
        step = [Fraction(math.comb(fresh, i), 2**fresh) for i in range(fresh + 1)]
        dist = [
            sum(
                (dist[w - i] * step[i] for i in range(fresh + 1) if 0 <= w - i < len(dist)),
                Fraction(0),
            )
            for w in range(len(dist) + fresh)
        ]
        budget = spent(units / stimuli, alpha, spending) - crossed
        c, mass = len(dist), Fraction(0)
        while c > 0 and mass + dist[c - 1] <= budget:
            c -= 1
            mass += dist[c]
        if c >= len(dist) or 2 * c <= d:
            out.append(None)
            continue
        out.append(c)
        crossed += mass
        dist = dist[:c]
    return tuple(out)


def rule_problem(rule: Rule, stimuli: int) -> str | None:
    """Why `rule` is not the one skillbench declares for a run of `stimuli` stimuli at its
    own floor, or None: a receipt's rule with another α, spending or looks would make its
    own boundaries (α 0.999 crosses at one win)."""
    want = rule_for(stimuli, rule.min_net_lift)
    if (rule.alpha, rule.spending) != (want.alpha, want.spending):
        return (
            f"α {rule.alpha:g} with {rule.spending} spending, not {want.alpha:g} with "
            f"{want.spending}"
        )
    if rule.looks != want.looks:
        return f"looks after {rule.looks[:8]} stimuli, not {want.looks} of {stimuli}"
    return None


def rule_for(
    stimuli: int, min_net_lift: float, alpha: float = ALPHA, spending: str = SPENDING
) -> Rule:
    """The rule for a run of `stimuli` stimuli: looks at LOOK_FRACTIONS of them, none before
    MIN_FIRST_LOOK (fewer votes can cross no boundary)."""
    points = {stimuli} | {
        math.ceil(f * stimuli) for f in LOOK_FRACTIONS if math.ceil(f * stimuli) >= MIN_FIRST_LOOK
    }
    return Rule(alpha=alpha, spending=spending, min_net_lift=min_net_lift, looks=sorted(points))


def rep_vote(reps: Sequence[str | None]) -> str | None:
    """A stimulus's vote from its repetitions' outcomes (None: unscored), as unit_votes
    takes it: the most common outcome, a tie when none leads; None with nothing scored."""
    counts = Counter(r for r in reps if r is not None)
    if not counts:
        return None
    (top, n), *rest = counts.most_common()
    return "tie" if rest and rest[0][1] == n else top


def reachable(reps: Sequence[str | None], k: int) -> frozenset[str | None]:
    """Every vote a stimulus can still end with, from its repetitions so far (up to k in
    all; a repetition still to run may be unscored, which leaves the vote as it is)."""
    left = max(0, k - len(reps))
    out = {rep_vote(reps)}
    for win in range(left + 1):
        for loss in range(left + 1 - win):
            for tie in range(left + 1 - win - loss):
                out.add(rep_vote([*reps, *["win"] * win, *["loss"] * loss, *["tie"] * tie]))
    return frozenset(out)


def settled(reps: Sequence[str | None], k: int) -> bool:
    """Whether the repetitions still to run (up to k) can no longer change the vote (a
    stimulus with nothing scored yet is not settled while repetitions are left)."""
    if len(reps) >= k:
        return True
    return rep_vote(reps) is not None and len(reachable(reps, k)) == 1


def _crossed(votes: Votes, rule: Rule, c: int | None) -> Verdict | None:
    """PASS / FAIL when the leader reaches `c` and the lift clears the floor, else None."""
    if c is None or votes.total == 0:
        return None
    lift, floor = Fraction(votes.win - votes.loss, votes.total), Fraction(str(rule.min_net_lift))
    if votes.win >= c and lift >= floor:
        return "PASS"
    if votes.loss >= c and -lift >= floor:
        return "FAIL"
    return None


def _quiet(votes: Votes) -> Verdict:
    """The verdict of a run that reached its last look without crossing."""
    if votes.total == 0:
        return NONE
    return INCONCLUSIVE if votes.decided < MIN_DECIDED else "NEUTRAL"


def walk(rule: Rule, votes_of: Iterable[Votes]) -> Stop | None:
    """The rule over the looks' votes so far (one Votes per look made, in order): the first
    stop, or None when the looks made so far say go on."""
    made: list[Votes] = []
    for j, votes in enumerate(votes_of):
        made.append(votes)
        decided = [v.decided for v in made]
        found = bounds(rule, decided)
        crossed = _crossed(votes, rule, found[-1])
        units = rule.looks[j]
        if crossed is not None:
            return Stop(j + 1, units, "boundary", crossed, decided, found)
        if j == len(rule.looks) - 1:
            return Stop(j + 1, units, "final", _quiet(votes), decided, found)
        # only once there are votes enough for NEUTRAL: an early INCONCLUSIVE would say
        # less than the full run could have
        if votes.decided >= MIN_DECIDED and futile(rule, decided, votes):
            return Stop(j + 1, units, "futility", _quiet(votes), decided, found)
        if votes.total and short(rule, votes.decided + rule.looks[-1] - units):
            # even were every stimulus still to come decided, the last look would have too
            # few votes to cross or to say NEUTRAL: the full run ends INCONCLUSIVE
            return Stop(j + 1, units, "futility", INCONCLUSIVE, decided, found)
    return None


def short(rule: Rule, most: int) -> bool:
    """Whether `most` decided votes are too few for any verdict beyond INCONCLUSIVE: under
    MIN_DECIDED, and all of them on one side is no less likely than α under no difference,
    so no look's boundary can be reached with them."""
    return most < MIN_DECIDED and Fraction(1, 2**most) > Fraction(rule.alpha)


def futile(rule: Rule, decided: Sequence[int], votes: Votes) -> bool:
    """The futility boundary: neither side could cross the last look's boundary even if
    every stimulus still to come voted for it (taken as arriving at the last look). A
    futility stop never rejects, so it cannot raise the false PASS or FAIL rate."""
    left = rule.looks[-1] - rule.looks[len(decided) - 1]
    later = len(rule.looks) - len(decided) - 1
    c = bounds(rule, [*decided, *[decided[-1]] * later, decided[-1] + left])[-1]
    return c is None or max(votes.win, votes.loss) + left < c


def look_votes(rows: Sequence[RowLike], opponent: str, order: Sequence[str], units: int) -> Votes:
    """The votes against `opponent` of the first `units` stimuli of `order`."""
    among = set(order[:units])
    votes = Counter(v for name, v in unit_votes(rows, opponent).items() if name in among)
    return Votes(votes["win"], votes["loss"], votes["tie"])


def stop_of(
    rows: Sequence[RowLike],
    rule: Rule,
    opponent: str,
    order: Sequence[str],
    looks: int,
    k: int,
    skipped: Collection[str] = (),
) -> Stop | None:
    """The rule over the first `looks` looks of these rows (the stimuli in plan order, up to
    `k` repetitions each): the first stop, or None to go on. A look whose stimuli still have
    open votes (repetitions left that could change them) stops only by curtailment: when every
    way those votes could end stops at that look with the same verdict. A stimulus with no row
    at all is not counted when it is `skipped` (on record as such, decided before any session
    of it ran); any other is not run yet, and its look is not made: no stop (a run cut there
    would otherwise make the later looks with no new votes, whose boundaries are lower)."""
    reps = reps_of(rows, opponent)
    made: list[Votes] = []
    for units in rule.looks[:looks]:
        if any(n not in reps and n not in skipped for n in order[:units]):
            return None
        votes = look_votes(rows, opponent, order, units)
        open_ = [
            list(got.values())
            for name in order[:units]
            if (got := reps.get(name)) is not None and not settled(list(got.values()), k)
        ]
        if open_:
            return _curtailed(rule, made, votes, [(rep_vote(r), reachable(r, k)) for r in open_])
        made.append(votes)
        stop = walk(rule, made)
        if stop is not None:
            return stop
    return None


def _curtailed(
    rule: Rule,
    made: list[Votes],
    votes: Votes,
    open_: Sequence[tuple[str | None, frozenset[str | None]]],
) -> Stop | None:
    """The stop at this look when every way its open votes could end stops here with one
    verdict, else None. `votes`: the look's votes as they stand (one of those ways: an open
    stimulus's repetitions still to run all unscored), recorded as the stop's; `open_`: each
    open stimulus's vote now and the votes it can still end with."""
    if len(open_) > MAX_OPEN:
        return None
    # the totals reachable: the settled stimuli's votes plus one option of each open one
    now = Counter(vote for vote, _ in open_)
    totals = {(votes.win - now["win"], votes.loss - now["loss"], votes.tie - now["tie"])}
    for _, options in open_:
        totals = {
            (w + (o == "win"), lo + (o == "loss"), t + (o == "tie"))
            for w, lo, t in totals
            for o in options
        }
    verdicts = set()
    for w, lo, t in totals:
        stop = walk(rule, [*made, Votes(w, lo, t)])
        if stop is None:
            return None
        verdicts.add(stop.verdict)
        if len(verdicts) > 1:
            return None
    decided = [*(v.decided for v in made), votes.decided]
    found = bounds(rule, decided)
    look = len(made) + 1
    return Stop(look, rule.looks[look - 1], "curtailed", verdicts.pop(), decided, found)


def _rows_missing(
    rows: Sequence[RowLike], units: Sequence[str], opponents: Sequence[str]
) -> str | None:
    """Why the rows are not whole sessions, or None: a repetition of a stimulus that ran has
    a row for every unit of it (a suite's every sub-case) against every opponent (a run
    drops no sub-case a session lost, nor an opponent's rows of a session it ran)."""
    of: dict[str, list[str]] = {}
    for unit in units:
        of.setdefault(stimulus(unit), []).append(unit)
    have = {(r.case, r.rep, r.opponent) for r in rows}
    for name, rep in sorted({(stimulus(r.case), r.rep) for r in rows}):
        for unit in of.get(name, ()):
            for opp in opponents:
                if (unit, rep, opp) not in have:
                    return f"{unit} rep {rep} has no row vs {opp}, though its session ran"
    return None


def reps_of(rows: Iterable[RowLike], opponent: str) -> dict[str, dict[int, str | None]]:
    """Per stimulus and repetition: the rep's vote (sign of its scored rows' net; None when
    none was scored) against `opponent`."""
    score = {"win": 1, "loss": -1, "tie": 0}
    net: dict[str, dict[int, int | None]] = {}
    for row in rows:
        if row.opponent != opponent:
            continue
        reps = net.setdefault(stimulus(row.case), {})
        value = None if row.decided_by in UNSCORED else score[row.outcome]
        if value is None:
            reps.setdefault(row.rep, None)
        else:
            reps[row.rep] = (reps.get(row.rep) or 0) + value
    return {
        s: {
            rep: None if v is None else "win" if v > 0 else "loss" if v < 0 else "tie"
            for rep, v in sorted(reps.items())
        }
        for s, reps in net.items()
    }


def stimuli_of(names: Iterable[str]) -> list[str]:
    """The stimuli of these unit names, in their order (a suite's sub-cases are one)."""
    return list(dict.fromkeys(stimulus(n) for n in names))


def problem(
    rows: Sequence[RowLike],
    rule: Rule | None,
    *,
    units: Sequence[str],
    k: int,
    opponents: Sequence[str],
    skipped: Collection[str] = (),
) -> str | None:
    """Why a complete run's rows are not what its stopping rule (or, without one, the fixed
    design) runs, or None. Every stimulus the verdict counts must have run every repetition
    its vote needed against every opponent; with a rule, the run must have gone on to the
    look where the rule stops. A stimulus with no row at all is no stop when it is on record
    as `skipped` (a tool its image lacks, a setup that failed)."""
    order = stimuli_of(units)
    by_opp = {opp: reps_of(rows, opp) for opp in opponents}  # (each read once, used below)
    reps: dict[str, dict[int, str | None]] = {}
    for opp in opponents:
        for name, got in by_opp[opp].items():
            reps.setdefault(name, {})
            for rep, vote in got.items():
                reps[name].setdefault(rep, vote)
    missing = _rows_missing(rows, units, opponents)
    if missing is not None:
        return missing
    if rule is None:
        for name in order:
            have = reps.get(name)
            if have and (len(have) != k or sorted(have) != list(range(1, k + 1))):
                return (
                    f"stopped {name} after {len(have)} of {k} repetitions with no stopping rule "
                    "declared (a fixed design runs them all)"
                )
            if not have and name not in skipped:
                return f"{name} has no row and is not on record as skipped"
        return None
    if rule.looks[-1] != len(order):
        return f"its stopping rule looks at {rule.looks[-1]} stimuli, not the {len(order)} planned"
    for name in order:
        for opp in opponents:
            ran = sorted(by_opp[opp].get(name, {}))
            if ran and ran[-1] > k:
                return f"{name} vs {opp} has repetitions {ran} of {k}: more than the design runs"
    stop = stop_of(rows, rule, opponents[0], order, len(rule.looks), k, skipped)
    first = by_opp[opponents[0]]
    if stop is None:  # a look with open votes whose end could still change the verdict ...
        for name in order:
            if name in first and not settled(list(first[name].values()), k):
                return (
                    f"stopped {name} vs {opponents[0]} after {len(first[name])} of {k} "
                    "repetitions while its vote could still change the verdict"
                )
        # ... or one a stimulus not run yet belongs to
        missing = next(n for n in order if n not in first and n not in skipped)
        return f"{missing} has no row and is not on record as skipped: the run stopped before it"
    for name in order[: stop.units]:
        if name not in reps:
            continue
        for opp in opponents:
            got = by_opp[opp].get(name, {})
            if sorted(got) != list(range(1, len(got) + 1)):
                return f"{name} vs {opp} has repetitions {sorted(got)}: a gap the waves never leave"
            if stop.reason != "curtailed" and not settled([got[r] for r in sorted(got)], k):
                return (
                    f"stopped {name} vs {opp} after {len(got)} of {k} repetitions while its "
                    "vote could still change"
                )
    beyond = [n for n in order[stop.units :] if n in reps]
    if beyond:
        return f"ran {beyond[0]} after its stopping rule stopped at look {stop.look}"
    return None
