"""What a run's scoring reports (docs/results.md, docs/statistics.md): the Summary that
summary.json, the report, JUnit and the receipt read, and the structs inside it."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from skillbench.models import Endpoint
from skillbench.results.activation import Activation, Ambient
from skillbench.results.records import ArmResult, Library
from skillbench.results.sequential import Stop
from skillbench.results.stats import Interval, Stats
from skillbench.results.verdict import MIN_NET_LIFT, NONE, Outcome, Repetitions, Verdict, Votes


class Comparison(msgspec.Struct):
    """The candidate against one opponent: the scored rows, and the independent units the
    verdict counts (docs/statistics.md)."""

    win: int  # rows
    loss: int
    tie: int
    net_lift: float | None  # over units: (units won - units lost) / units scored
    sign_p: float  # one-sided exact sign test over the decided units
    units: Votes = Votes()
    verdict: Verdict = NONE


class Efficiency(msgspec.Struct):
    turns: float
    seconds: float
    cost_usd: float | None
    input_tokens: float
    output_tokens: float
    models: dict[str, int] = {}  # an agent CLI's model calls, by the model each named


class Skipped(msgspec.Struct):
    case: str
    reason: str
    environment: bool = False  # the image lacks a `requires` tool: not the run's failing
    units: list[str] = []  # the scored units it would have had (a suite's sub-cases)


DiagnosticKind = Literal[
    "non-discriminating",
    "environment-gap",
    "flaky",
    "suite-distractor",
    "judge-position",
    "not-graded",
    "never-fired",
]
Driver = Literal["model", "scripted"]  # scripted: a fixed script, it shows the pipeline only


class Diagnostic(msgspec.Struct, frozen=True):
    """Something about the eval itself worth fixing (docs/statistics.md): a check that cannot tell
    the arms apart, an environment gap read as a result, a flaky case."""

    kind: DiagnosticKind
    case: str
    detail: str
    check: str | None = None


class NoiseFloor(msgspec.Struct, frozen=True):
    """eval --aa: how often two independent baseline arms disagree on a unit."""

    flips: int
    compared: int
    flip_rate: float | None


class RowSummary(msgspec.Struct, omit_defaults=True):
    """One row as the summary shows it."""

    case: str
    rep: int
    opponent: str
    outcome: Outcome
    decided_by: str
    arms: dict[str, ArmResult]
    reason: str | None = None  # why an unscored row measured nothing


class Reuse(msgspec.Struct, frozen=True):
    """Baseline and incumbent sessions taken from earlier runs instead of run again."""

    sessions: int  # reused
    of: int  # baseline and incumbent sessions of the run
    runs: list[str]  # where they came from


class Accounting(msgspec.Struct, frozen=True, kw_only=True):
    """What the run spent against its plan (docs/results.md): by call kind from the run's
    ledger, by arm from its sessions, what was refused for the budget, what stopping saved."""

    planned_usd: float | None  # the plan's estimate (--plan's figure), when one was made
    ceiling_usd: float | None  # --max-cost
    spent_usd: float  # every call the ledger settled, resumed runs' earlier spend included
    by_kind: dict[str, float]  # agent, judge, grader, triggers, generation, tuning, earlier
    by_arm: dict[str, float]  # the arm's sessions (their agent and grader calls)
    sessions: dict[str, int]  # sessions run per arm (reused ones not counted)
    refused_calls: int  # calls the ledger refused: never sent
    refused_sessions: int  # sessions ended by such a refusal: recorded as not run
    not_run: int  # sessions a sequential stop made unnecessary
    saved_usd: float | None  # not_run at the mean price of the sessions that ran


class Summary(msgspec.Struct, kw_only=True):
    """What a run established (docs/results.md summary keys, plus arm scores, case runs and
    provenance): summary.json, `--json`, the report, JUnit and the receipt all read this."""

    skill: str
    version: str
    run_id: str
    verdict: Verdict  # docs/statistics.md
    why: str
    expected_rows: int
    scored_rows: int
    partial: bool
    complete: bool
    stopped: str | None
    comparisons: dict[str, Comparison]
    rows: list[RowSummary]
    skipped: list[Skipped]
    triggers: dict[str, Any] | None = None  # TriggerReport.summary()
    efficiency: dict[str, Efficiency]
    arm_scores: dict[str, float | None]
    case_runs: dict[str, list[int]]  # arm -> [passed, expected]
    agent: str
    agent_version: str
    models: dict[str, str]  # agent, judge
    driver: Driver
    endpoints: dict[str, Endpoint] = {}  # agent, judge: where each model was reached
    k: Repetitions
    seed: int
    stats: dict[str, Stats] = {}  # per opponent: power and intervals (docs/statistics.md)
    diagnostics: list[Diagnostic] = []
    triggers_note: str | None = None  # why the triggers were not measured
    # case -> phase -> the network it had (evals/netreport.py): cases that declare one
    network: dict[str, dict[str, str]] = {}
    # case -> what it ran under that differs from what it asked (evals/asrun.py)
    differences: dict[str, list[str]] = {}
    spend_usd: float = 0.0  # every call the run made: generation, sessions, judge, triggers
    reused: Reuse | None = None
    noise_floor: NoiseFloor | None = None  # eval --aa
    # docs/statistics.md: was the skill loaded, what the CLI brought on its own, the library arm
    activation: Activation | None = None
    ambient: Ambient | None = None
    library: Library | None = None
    min_net_lift: float = MIN_NET_LIFT  # the practical floor the verdict used
    stop: Stop | None = None  # a sequential run: where its stopping rule stopped
    not_run: int = 0  # sessions the stop made unnecessary (no loss, no tie: never run)
    accounting: Accounting | None = None


class Power(msgspec.Struct, frozen=True, kw_only=True):
    """The part of an opponent's Stats that its rows alone decide."""

    decided: int  # units won + units lost
    needed: int | None
    underpowered: bool
    sign_p: float
    net_lift_ci: Interval | None  # a cluster bootstrap over the unit votes


class Derived(msgspec.Struct, frozen=True, kw_only=True):
    """What a run's rows establish: the verdict, the counts and the power of the test."""

    verdict: Verdict  # against the first opponent (the baseline); NONE when nothing was scored
    verdicts: dict[str, Verdict]  # per opponent
    expected_rows: int
    scored_rows: int
    comparisons: dict[str, Comparison]
    power: dict[str, Power]
    stop: Stop | None = None  # a sequential run: where its rule stopped
