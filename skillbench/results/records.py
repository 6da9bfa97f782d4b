"""What a run writes: the plan, and the journal's session and row records (docs/results.md)."""

from __future__ import annotations

import msgspec

from skillbench.models import Endpoint
from skillbench.models.base import Usage
from skillbench.results.checks import CheckResult
from skillbench.results.sequential import Rule
from skillbench.results.verdict import MIN_NET_LIFT, UNSCORED, Outcome, Repetitions

BASELINE, CANDIDATE, INCUMBENT = "baseline", "candidate", "incumbent"
SUITE = "suite"  # the session name of evals/suite.yaml
AA = "baseline-b"  # eval --aa: a second, independent baseline arm (the noise floor)


class Unit(msgspec.Struct, frozen=True):
    """One scored thing: a case (its own session) or a suite sub-case (the suite's session)."""

    name: str
    session: str  # the case name, or "suite"
    judge: bool = False
    distractor: bool = False  # a suite sub-case the suite marks as a trap (docs/statistics.md)


class Incumbent(msgspec.Struct, frozen=True):
    """The published version the candidate is also compared with."""

    version: str  # v3
    digest: str
    path: str


class LibrarySkill(msgspec.Struct, frozen=True):
    """A sibling the library arm stages beside the skill under test."""

    name: str
    path: str
    digest: str


class Library(msgspec.Struct, frozen=True):
    """eval --with-library: every arm also stages these siblings (the library minus the skill
    under test), so the candidate competes with them and the baseline has them too."""

    path: str
    skills: tuple[LibrarySkill, ...]
    digest: str  # over the siblings' names and digests: what baseline reuse keys on


class Plan(msgspec.Struct, kw_only=True):
    """Everything that identifies a run; `--resume` refuses when any of it changed."""

    run_id: str
    skill: str
    skill_dir: str
    version: str
    assets_digest: str
    model: str
    judge_model: str
    grader_model: str | None = None  # the `expect` checks' grader (None: the judge model)
    grader_runs: int = 1  # --grader-runs: gradings per session; a disagreement fails closed
    k: Repetitions
    seed: int
    arms: list[str]
    opponents: list[str]
    sessions: list[str]  # session names in order: case names, then "suite"
    units: list[Unit]
    engine_version: str
    created_at: str
    case_filter: str | None = None
    evals: list[str] = []  # --evals: foreign eval files outside the skill (--resume keeps them)
    incumbent: Incumbent | None = None
    team: str | None = None  # the team repo the incumbent came from (--resume keeps it)
    agent: str = "builtin"  # what runs in the arms (agents/)
    agent_version: str = ""
    min_net_lift: float = MIN_NET_LIFT  # the verdict's practical floor (docs/statistics.md)
    sequential: Rule | None = None  # --sequential: the stopping rule, declared before any session
    # where the agent and judge models are reached (docs/trust.md); --resume refuses a change
    endpoints: dict[str, Endpoint] = {}
    library: Library | None = None


def session_key(session: str, arm: str, rep: int) -> str:
    return f"{session}.{arm}.{rep}"


class SessionRecord(msgspec.Struct, tag="session", kw_only=True):
    """A finished session. outcome: pass | fail | error | skipped (setup failed)."""

    key: str
    session: str
    arm: str
    rep: int
    outcome: str
    stop_reason: str = ""
    turns: int = 0
    seconds: float = 0.0
    usage: Usage = Usage()
    cost_usd: float | None = None
    error: str | None = None
    attempts: int = 1
    transcript: str | None = None
    checks: dict[str, list[CheckResult]] = {}  # unit name -> results
    notes: list[str] = []  # what the handover changed, what the kept workspace left out
    reused_from: str | None = None  # the run whose identical session this is (not rerun)
    node: str | None = None  # the cluster node it ran on (None: this machine)
    # the skills the agent loaded (docs/trust.md, "Activation"): those the skill observer saw
    # a file of opened, or its own skill tool loaded
    loaded: list[str] = []
    observed: dict[str, list[str]] = {}  # skill -> its files the observer saw opened
    declared: list[str] = []  # the skills its own skill tool loaded (its transcript says)
    ambient: list[str] = []  # the skills the agent CLI brought on its own (none staged them)
    models: dict[str, int] = {}  # an agent CLI's model calls, by the model each named


class ArmResult(msgspec.Struct, omit_defaults=True):
    passed: bool
    error: bool
    checks: list[CheckResult]
    notes: list[str] = []
    metrics: dict[str, float] = {}  # every named metric its reward files gave


class RowRecord(msgspec.Struct, tag="row", kw_only=True):
    """One comparison: the candidate vs an opponent on one unit and repetition."""

    case: str
    rep: int
    opponent: str
    outcome: Outcome  # win | loss | tie (from the candidate's side), or unscored
    decided_by: str  # checks | judge | judge-split | judge-refused | ... | unscored
    arms: dict[str, ArmResult]
    judge_reasons: list[str] = []
    judge_candidate_first: bool | None = None
    judge_cost_usd: float | None = None
    judge_winners: list[str] = []  # the judge's answer in each order: A | B | tie
    reason: str | None = None  # why an unscored row says nothing (an error, an environment gap)

    @property
    def scored(self) -> bool:
        return self.decided_by not in UNSCORED


Record = SessionRecord | RowRecord
