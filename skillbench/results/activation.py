"""Activation and ambient skills (docs/statistics.md): was the skill under test loaded in each
candidate session, what the lift is over the sessions where it was, and which skills the agent
CLI brought on its own. Pure functions over the run's records.

A skill that never loads cannot help or hurt: a NEUTRAL verdict then says nothing about its
instructions, only that the agent never read them. Activation tells the two apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import msgspec

from skillbench.results.records import CANDIDATE, Plan, RowRecord, SessionRecord, session_key
from skillbench.results.verdict import Outcome, tally

FIRED_WHERE_NOT = "fired where it should not"
NEVER_LOADED = "the skill never loaded: the verdict measures its absence"
RAN = ("pass", "fail")  # sessions whose transcript is the agent's whole work


class CaseActivation(msgspec.Struct, frozen=True):
    """One case (or the suite): in how many of its candidate sessions the skill loaded."""

    case: str
    fired: int
    sessions: int
    expected: bool = True  # False: `expect_activation: false`, loading it there is a loss
    explicit: bool = False  # the task opens with `/skill-name`: an invocation, not a trigger


class Activation(msgspec.Struct, frozen=True):
    """The skill's activation over the run's candidate sessions."""

    skill: str
    fired: int  # candidate sessions of the cases that expect the skill that loaded it
    sessions: int  # candidate sessions of those cases that ran
    misfired: int  # candidate sessions of `expect_activation: false` cases that loaded it
    unexpected: int  # candidate sessions of those cases that ran
    cases: list[CaseActivation]
    # the net lift against the first opponent in units (docs/statistics.md: one vote per case, one
    # per suite), over every scored row (the overall lift, as the verdict's comparison counts
    # it) and over the rows whose candidate session loaded the skill: the same rule, so the
    # two read side by side
    lift: float | None
    lift_when_fired: float | None
    units_when_fired: int
    # tasks that open with `/skill-name` ask for the skill by name: loading it there is an
    # explicit invocation, counted apart so that it never reads as organic triggering
    invoked: int = 0  # candidate sessions of those cases that loaded it
    invocations: int = 0  # candidate sessions of those cases that ran
    # how the loads were seen (docs/trust.md, "Activation"), over every candidate session that
    # loaded it: a file of it opened (the sandbox's observer), or only its skill tool's call
    opened: int = 0
    by_tool: int = 0

    @property
    def never(self) -> bool:
        return self.sessions > 0 and self.fired == 0


class Ambient(msgspec.Struct, frozen=True):
    """The skills the agent CLI brought on its own, per arm, and what was done about them."""

    arms: dict[str, list[str]]  # arm -> every such skill its sessions were shown
    policy: str  # "turned off (...)", "kept (...)", or that the CLI has no setting for it


def explicit_invocation(skill: str, task: str) -> bool:
    """Whether `task` opens with `/skill` (a slash command, passed to the agent as written)."""
    return re.match(rf"\s*/{re.escape(skill)}(?![\w-])", task) is not None


def fired(skill: str, record: SessionRecord | None) -> bool:
    return record is not None and skill in record.loaded


def misfire(
    skill: str, expected: bool, cand: SessionRecord | None, opp: SessionRecord | None
) -> Outcome | None:
    """On a case that says `expect_activation: false`, the row's outcome when exactly one arm
    loaded the skill (the one that did loses); None when that does not decide it."""
    if expected or cand is None or opp is None:
        return None
    if cand.outcome not in RAN or opp.outcome not in RAN:
        return None  # an errored arm leaves the row unscored, as everywhere else
    mine, theirs = fired(skill, cand), fired(skill, opp)
    if mine == theirs:
        return None
    return "loss" if mine else "win"


def _lift(rows: Iterable[RowRecord], opponent: str) -> tuple[float | None, int]:
    votes = tally(rows, opponent)
    return votes.net_lift, votes.total


def activation_of(
    plan: Plan,
    sessions: Mapping[str, SessionRecord],
    rows: Iterable[RowRecord],
    expected: Mapping[str, bool],
    explicit: Mapping[str, bool] | None = None,
) -> Activation | None:
    """Activation over the candidate sessions that ran (None when none did). `expected`:
    per session name, whether the case expects the skill (False: expect_activation: false);
    `explicit`: whether its task invokes the skill by `/name` (counted apart)."""
    explicit = explicit or {}
    cases = []
    loads: list[SessionRecord] = []
    for name in plan.sessions:
        ran = [
            r
            for rep in range(1, plan.k + 1)
            if (r := sessions.get(session_key(name, CANDIDATE, rep))) is not None
            and r.outcome in RAN
        ]
        if ran:
            hits = [r for r in ran if fired(plan.skill, r)]
            loads += hits
            cases.append(
                CaseActivation(
                    name, len(hits), len(ran), expected.get(name, True), explicit.get(name, False)
                )
            )
    if not cases:
        return None
    session_of = {u.name: u.session for u in plan.units}
    against = [r for r in rows if r.scored and r.opponent == plan.opponents[0]]
    when_fired = [
        r
        for r in against
        if fired(plan.skill, sessions.get(session_key(session_of[r.case], CANDIDATE, r.rep)))
    ]
    lift, _ = _lift(against, plan.opponents[0])
    lift_fired, n_fired = _lift(when_fired, plan.opponents[0])
    wanted = [c for c in cases if c.expected and not c.explicit]
    unwanted = [c for c in cases if not c.expected and not c.explicit]
    asked = [c for c in cases if c.explicit]
    return Activation(
        skill=plan.skill,
        fired=sum(c.fired for c in wanted),
        sessions=sum(c.sessions for c in wanted),
        misfired=sum(c.fired for c in unwanted),
        unexpected=sum(c.sessions for c in unwanted),
        cases=cases,
        lift=lift,
        lift_when_fired=lift_fired,
        units_when_fired=n_fired,
        invoked=sum(c.fired for c in asked),
        invocations=sum(c.sessions for c in asked),
        opened=sum(plan.skill in r.observed for r in loads),
        by_tool=sum(plan.skill not in r.observed for r in loads),
    )


def ambient_of(plan: Plan, sessions: Mapping[str, SessionRecord], policy: str) -> Ambient:
    """What each arm's sessions were shown of the agent's own skills, and `policy`, what was
    done about them."""
    arms = {
        arm: sorted({s for r in sessions.values() if r.arm == arm for s in r.ambient})
        for arm in plan.arms
    }
    return Ambient(arms, policy)
