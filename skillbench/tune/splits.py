"""Splitting a skill's trigger prompts into train, validation and test (issue 25, part 1).

Stratified (should / should-not apart) and seeded, so the same files and seed give the same
split. The proposer only ever sees train; the choice between descriptions is made on
validation; test is measured once, at the end. `evals/triggers.test.yaml`, when present, is
the test set the author keeps apart, and triggers.yaml is split into train and validation.
"""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import msgspec

from skillbench.errors import SkillbenchError
from skillbench.evals import load_triggers
from skillbench.evals.model import Triggers
from skillbench.evals.triggers_file import load_skill_triggers, trigger_files
from skillbench.util.lookalike import fold

MIN_PER_SIDE = 2  # below this a set cannot say anything about one side
FIRM_PER_SIDE = 5  # below this one prompt moves a set's figure by 20 points or more
DEFAULT_FRACTIONS = (0.5, 0.25, 0.25)
SETS = ("train", "validation", "test")
TEST_FILE = "triggers.test.yaml"


class SplitError(SkillbenchError):
    """The prompts cannot be split as asked; the message is one line saying what to do."""


class Prompts(msgspec.Struct, frozen=True):
    should_trigger: tuple[str, ...] = ()
    should_not_trigger: tuple[str, ...] = ()

    def triggers(self, path: str) -> Triggers:
        return Triggers(path, self.should_trigger, self.should_not_trigger)

    def __add__(self, other: Prompts) -> Prompts:
        return Prompts(
            self.should_trigger + other.should_trigger,
            self.should_not_trigger + other.should_not_trigger,
        )

    def all(self) -> set[str]:
        return {*self.should_trigger, *self.should_not_trigger}


class Split(msgspec.Struct, frozen=True):
    """The three sets, and how they were made (recorded in the run folder as split.json)."""

    train: Prompts
    validation: Prompts
    test: Prompts
    seed: int
    fractions: tuple[float, float, float]
    test_file: str | None = None  # the held-apart test set, when the author keeps one


def parse_fractions(text: str) -> tuple[float, float, float]:
    """`0.5/0.25/0.25` as three shares summing to 1; ValueError with what is wrong."""
    parts = text.split("/")
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or any(not v > 0 for v in values):
        raise ValueError(f"--split {text}: write three positive shares TRAIN/VALIDATION/TEST")
    if abs(sum(values) - 1.0) > 1e-6:
        raise ValueError(f"--split {text}: the shares add up to {sum(values):g}, not 1")
    return values[0], values[1], values[2]


def _sizes(n: int, shares: list[float]) -> list[int]:
    """How many of `n` prompts go to each set after the first (train takes the rest): each
    its share rounded half up, at least MIN_PER_SIDE, so a small set still has two."""
    rest = [max(MIN_PER_SIDE, math.floor(n * share + 0.5)) for share in shares[1:]]
    return [n - sum(rest), *rest]


def near_key(prompt: str) -> str:
    """What a prompt is once case, punctuation, spacing and Unicode spelling are set aside:
    two prompts with the same key are one prompt to a router, so they never land in two
    sets (util/lookalike.py: fullwidth and other compatibility forms, accents, invisible
    format characters and blank letters, look-alikes of Latin letters). Spaces go too: a
    blank letter may stand for one (`please\u3164format`) or sit inside a word (`of\u3164fice`),
    and either way the twin is the same prompt; `_` counts as punctuation."""
    return re.sub(r"[\W_]+", "", fold(prompt))


def _groups(prompts: tuple[str, ...]) -> list[list[int]]:
    """The prompts' indices, near-duplicates together, in the order each first appears."""
    groups: dict[str, list[int]] = {}
    for i, prompt in enumerate(prompts):
        groups.setdefault(near_key(prompt), []).append(i)
    return list(groups.values())


def _deal(prompts: tuple[str, ...], sizes: list[int], rng: random.Random) -> list[tuple[str, ...]]:
    """Shuffle the groups of near-duplicates, then deal out the sizes (in groups: test first,
    then validation); each set keeps the file's order so it reads like the file."""
    order = _groups(prompts)
    rng.shuffle(order)
    dealt, start = [], 0
    for size in reversed(sizes):
        chosen = sorted(i for group in order[start : start + size] for i in group)
        dealt.append(tuple(prompts[i] for i in chosen))
        start += size
    return list(reversed(dealt))


def split_triggers(
    skill_dir: Path, fractions: tuple[float, float, float], seed: int
) -> tuple[Split, list[str]]:
    """The split of the skill's trigger prompts, and a warning when a set is thinner than
    FIRM_PER_SIDE. Raises SplitError (one line) when a set would get fewer than
    MIN_PER_SIDE prompts on a side; SpecError when a triggers file is broken."""
    evals = skill_dir / "evals"
    if not trigger_files(skill_dir):
        least = next(
            n for n in range(2 * MIN_PER_SIDE, 1000) if min(_sizes(n, list(fractions))) >= 2
        )
        raise SplitError(
            f"{skill_dir}: no evals/triggers.yaml to tune on; write one first with "
            f"`skillbench gen {skill_dir} --kind triggers` (it writes 5 prompts a side; a split "
            f"at --split {'/'.join(f'{f:g}' for f in fractions)} needs {least} a side, or a test "
            f"set kept apart in evals/{TEST_FILE})"
        )
    found, _ = load_skill_triggers(skill_dir)
    assert found is not None  # trigger_files found one, and a broken one raised
    pool, path = found, Path(found.path)
    held = evals / TEST_FILE
    test: Prompts | None = None
    if held.is_file():
        fixed, _ = load_triggers(held)
        test = Prompts(
            *(tuple(dict.fromkeys(x)) for x in (fixed.should_trigger, fixed.should_not_trigger))
        )
        tuned = {near_key(p): p for p in (*pool.should_trigger, *pool.should_not_trigger)}
        shared = sorted(p for p in test.all() if near_key(p) in tuned)
        if shared:
            twin = tuned[near_key(shared[0])]
            said = "" if twin == shared[0] else f" (as {twin!r}: the same prompt to a router)"
            raise SplitError(
                f"{held}: {shared[0]!r} is also in triggers.yaml{said}; a held-apart test set "
                "shares no prompt with the prompts tuned on: remove it from one file"
            )
    names = ["train", "validation"] if test is not None else list(SETS)
    shares = list(fractions[:2]) if test is not None else list(fractions)
    shares = [s / sum(shares) for s in shares]
    rng = random.Random(seed)
    sides: dict[str, list[tuple[str, ...]]] = {}
    for side in ("should_trigger", "should_not_trigger"):
        prompts = tuple(dict.fromkeys(getattr(pool, side)))  # a duplicate would leak across sets
        sizes = _sizes(len(_groups(prompts)), shares)  # in groups of near-duplicates
        if min(sizes) < MIN_PER_SIDE:
            label = side.replace("_", "-")
            needed = MIN_PER_SIDE + sum(sizes[1:])
            raise SplitError(
                f"{path}: {len(prompts)} {label} prompt(s) are too few to split into "
                f"{' / '.join(names)} with at least {MIN_PER_SIDE} in each ({needed} needed at "
                f"--split {'/'.join(f'{f:g}' for f in fractions)}); add prompts"
                + (f", or keep a test set apart in evals/{TEST_FILE}" if test is None else "")
            )
        sides[side] = _deal(prompts, sizes, rng)
    sets = [
        Prompts(sides["should_trigger"][i], sides["should_not_trigger"][i])
        for i in range(len(names))
    ]
    if test is not None:
        for side in ("should_trigger", "should_not_trigger"):
            if len(getattr(test, side)) < MIN_PER_SIDE:
                raise SplitError(
                    f"{held}: {len(getattr(test, side))} {side.replace('_', '-')} prompt(s); "
                    f"a test set needs at least {MIN_PER_SIDE} per side: add prompts"
                )
        sets.append(test)
    thin = [
        f"{name} {len(s.should_trigger)}+{len(s.should_not_trigger)}"
        for name, s in zip(SETS, sets, strict=True)
        if min(len(s.should_trigger), len(s.should_not_trigger)) < FIRM_PER_SIDE
    ]
    warnings = [
        f"note: thin sets ({', '.join(thin)} should+should-not prompts): below "
        f"{FIRM_PER_SIDE} a side one prompt moves a figure a lot; add prompts for a firmer result"
    ] * bool(thin)
    split = Split(
        sets[0],
        sets[1],
        sets[2],
        seed=seed,
        fractions=fractions,
        test_file=str(held) if test else None,
    )
    return split, warnings
