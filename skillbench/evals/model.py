"""The eval asset schema: cases, the suite, checks and triggers (docs/formats.md)."""

from __future__ import annotations

from typing import Literal

import msgspec

from skillbench.evals.mcp import McpServer
from skillbench.evals.network import Network
from skillbench.evals.problems import Problem
from skillbench.evals.services import Service

Bucket = Literal["explicit", "implicit", "contextual", "negative", "adversarial"]
BUCKETS: tuple[str, ...] = ("explicit", "implicit", "contextual", "negative", "adversarial")


MAX_TIMEOUT_MINUTES = 120  # the default cap on an agent phase (setting `max_timeout`)
CASE_TIMEOUT_MINUTES = 1440  # what a case may ask for: a day (Harbor tasks give hours)


def timeout_note(minutes: int, cap: int = MAX_TIMEOUT_MINUTES) -> str:
    """What a case whose timeout passes the run's cap is told (`check`, the run's start)."""
    return (
        f"timeout {minutes} min is above the cap of {cap} min: the agent phase is cut at "
        f"{cap} min (raise it with `--max-timeout {minutes}` or `max_timeout = {minutes}` in "
        "skillbench.toml)"
    )


DEFAULT_MAX_TURNS = 200


class Check(msgspec.Struct, frozen=True):
    """One check: a kind and its argument (None for a bare kind), and where it was written."""

    kind: str
    arg: str | None = None
    line: int = 0
    script: str | None = None  # verifier / reward `run`: the script's path under evals/
    min: float | None = None  # reward, grader (Skillgrade's): the smallest passing score
    metric: str | None = None  # reward: the reward.json metric that decides (default: `reward`)
    timeout: float | None = None  # reward `run`, grader: seconds its script may take
    # grader: Vally's `program` contract, {"stimulus", "config"} JSON for its GraderInput
    program: str | None = None

    @property
    def name(self) -> str:
        """How the check is shown in reports: `kind: argument`."""
        if self.kind == "reward":
            what = f"{self.arg}:{self.metric}" if self.metric else self.arg
            return f"reward: {what} >= {self.min if self.min is not None else 1:g}"
        return self.kind if self.arg is None else f"{self.kind}: {self.arg}"


class SubCase(msgspec.Struct, frozen=True):
    """A named, scored part of a suite: checks only, run against the suite's one session."""

    name: str
    checks: tuple[Check, ...]
    line: int = 0
    distractor: bool = False  # a trap (a harmless change to leave alone), not a defect to find


class Session(msgspec.Struct, frozen=True, kw_only=True):
    """What one agent session needs: the fields a case and a suite share."""

    name: str
    path: str
    task: str
    checks: tuple[Check, ...] = ()
    judge: str | None = None
    files: dict[str, str] = {}
    fixture: str | None = None  # absolute path of the seed tree
    setup: str | None = None
    bucket: Bucket | None = None
    requires: tuple[str, ...] = ()
    timeout_minutes: int = MAX_TIMEOUT_MINUTES
    max_turns: int = DEFAULT_MAX_TURNS
    oracle: str | None = None  # a reference solution's script, its path under evals/
    image: str | None = None  # a local image the case runs in (with the sandbox's users added)
    containerfile: str | None = None  # absolute path of the Containerfile its image is built from
    build_network: bool = False  # the containerfile's build may reach the network
    cpus: float | None = None  # the case's own CPUs and memory (evals/resources.py)
    memory: str | None = None
    workdir: str | None = None  # where its workspace is (default /work), e.g. an image's /app
    network: Network = Network()  # what each phase may reach through the egress proxy
    services: tuple[Service, ...] = ()  # containers beside each arm's sandbox, in start order
    mcp_servers: tuple[McpServer, ...] = ()  # offered to an agent CLI (evals/mcp.py)
    # a Harbor task's folder under evals/: its tests/ and solution/ are shown read-only at
    # /tests and /solution in the checker (and /solution to the oracle), as Harbor does
    harbor: str | None = None
    # a folder of the workspace where the candidate's arm also finds the skill under test
    # (skill-optimizer copies its references into /work, so its graders look for
    # /work/<folder>/SKILL.md); the baseline never has it (docs/formats.md)
    skill_in_workspace: str | None = None
    # the source's scripts written for root (docs/trust.md "Scripts written for root"):
    # `verifier` (its verifier/reward `run` scripts, in the checker) and `oracle` (the
    # reference solution) run as root on a writable root filesystem; never the agent
    as_root: tuple[str, ...] = ()
    # graders of another tool's file that cannot run in the sandbox (a tool it does not
    # offer, another skill): reported as not graded, with why; none when all of them can
    not_graded: tuple[str, ...] = ()


class Case(Session, frozen=True, kw_only=True):
    """One execution case (`evals/cases/<stem>.yaml`); its name is the file stem."""

    # False: a task the skill is not for; the candidate loading it there loses the row
    expect_activation: bool = True


class Suite(Session, frozen=True, kw_only=True):
    """`evals/suite.yaml`: one shared session per arm, many scored sub-cases; never judged."""

    cases: tuple[SubCase, ...]


class Triggers(msgspec.Struct, frozen=True):
    """`evals/triggers.yaml`: prompts that should and should not pick the skill."""

    path: str
    should_trigger: tuple[str, ...] = ()
    should_not_trigger: tuple[str, ...] = ()


class EvalAssets(msgspec.Struct, frozen=True):
    """Everything under a skill's `evals/` that loaded, with every problem found."""

    skill_dir: str
    cases: tuple[Case, ...] = ()
    suite: Suite | None = None
    triggers: Triggers | None = None
    problems: tuple[Problem, ...] = ()
