"""The Agent seam (docs/agents.md): what runs inside an arm. One protocol, one registry
(agents/__init__.py), one conformance suite (tests/agents/test_agents.py) every agent passes.

An agent is asked for a session; the session says whether the sandbox needs a relay to the
host (a CLI agent's way to its model broker), then runs the task in the arm's staged sandbox
and writes the one transcript schema (results/transcript.py) that every check reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import msgspec

from skillbench.agents.builtin.loop import SessionResult, SkillInfo
from skillbench.errors import SkillbenchError
from skillbench.evals.mcp import McpServer
from skillbench.models.base import Usage
from skillbench.models.ledger import RunLedger
from skillbench.models.pricing import Price
from skillbench.results.transcript import TraceWriter
from skillbench.sandbox.base import Relay, Sandbox


class AgentError(SkillbenchError):
    """The agent cannot run as asked (a model it cannot use, an image it cannot build)."""


class SessionRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One arm's session, as the engine asks for it."""

    key: str  # <case>.<arm>.<rep>
    case: str
    arm: str
    rep: int
    model: str  # a model reference, e.g. anthropic/claude-sonnet-4-6
    task: str
    skills: tuple[SkillInfo, ...]  # staged under /skills/<name>; empty for the baseline
    max_turns: int
    timeout_s: float
    prices: Mapping[str, Price] = {}
    budget: float | None = None  # USD this session may still spend (--max-cost)
    ledger: RunLedger | None = None  # the run's, every call of every session reserves in it
    exchanges: Path  # where a broker writes the session's model exchanges
    routing: bool = False  # a trigger session: only the agent's way to load a skill, no work

    @property
    def kind(self) -> str:
        """What the run's ledger counts this session's calls as."""
        return "triggers" if self.routing else "agent"

    mcp_servers: tuple[McpServer, ...] = ()  # the case's, for an agent CLI's MCP config


class AgentSession(Protocol):
    """A session being prepared: `relay` is set before the sandbox is made."""

    relay: Relay | None
    ambient: tuple[str, ...]  # after `run`: the skills the CLI brought on its own
    # where `run` copies the staged skills for the agent to find (None: it reads /skills);
    # the skill observer watches the copies too (sandbox/inside/observer.py)
    skill_home: str | None

    async def run(self, sandbox: Sandbox, trace: TraceWriter) -> SessionResult:
        """Run the task to its end in the staged sandbox, writing the transcript."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class EarlyStart(Protocol):
    """A session whose first model call needs nothing from the sandbox (builtin: the model is
    called from the host), so it can be sent while the sandbox is staged."""

    def prestart(self, workdir: str) -> None:
        """Send the opening call now; `run` reads its reply, `close` stops it if unread."""
        ...

    async def abandon(self) -> tuple[Usage, float | None]:
        """The sandbox never came: the opening call's usage and cost, once it has ended."""
        ...


class Agent(Protocol):
    """What runs in an arm: `builtin` (skillbench's loop, host side) or an agent CLI."""

    name: str

    def version(self) -> str:
        """What provenance records, e.g. `2.1.332` for Claude Code."""
        ...

    def check_model(self, model: str) -> None:
        """Raise AgentError when this agent cannot use `model`."""
        ...

    def image_name(self, base: str) -> str:
        """The name of the sandbox image this agent runs in."""
        ...

    def image(self, base: str, log: Callable[[str], None]) -> str:
        """The sandbox image this agent runs in, built from `base` on first use."""
        ...

    async def session(self, request: SessionRequest) -> AgentSession: ...

    def invoked(self, events: list[dict[str, Any]]) -> set[str]:
        """The skills the agent loaded, by name, in a session's raw transcript events."""
        ...

    def ambient_policy(self) -> str:
        """What is done about the skills the agent brings on its own, for the report."""
        ...

    async def aclose(self) -> None:
        """Release what the agent holds for the whole run (model clients)."""
        ...
