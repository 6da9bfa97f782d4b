"""The agents an arm can run, by name (docs/agents.md): a registry, not an if-chain. Adding an
agent is one module here and one line in AGENTS; a package outside the tree adds one through the
`skillbench.agents` entry-point group (skillbench/plugins.py)."""

from __future__ import annotations

import difflib
import functools
import inspect

from skillbench.agents.base import Agent, AgentError, AgentSession, SessionRequest
from skillbench.agents.builtin.agent import BuiltinAgent
from skillbench.agents.claude_code import ClaudeCodeAgent
from skillbench.agents.codex import CodexAgent
from skillbench.agents.copilot import CopilotAgent
from skillbench.agents.gemini_cli import GeminiCliAgent
from skillbench.agents.opencode import OpenCodeAgent
from skillbench.plugins import AGENT_GROUP, load_group, missing

AGENTS: dict[str, type] = {
    "builtin": BuiltinAgent,
    "claude-code": ClaudeCodeAgent,
    "codex": CodexAgent,
    "opencode": OpenCodeAgent,
    "gemini-cli": GeminiCliAgent,
    "copilot": CopilotAgent,
}
DEFAULT_AGENT = "builtin"

__all__ = [
    "AGENTS",
    "Agent",
    "AgentError",
    "AgentSession",
    "SessionRequest",
    "agents",
    "make_agent",
]
# what a plugin agent's class must have: the Agent protocol's members
AGENT_MEMBERS = (
    *("name", "version", "check_model", "image_name", "image", "session", "invoked"),
    *("ambient_policy", "aclose"),
)


def _agent_class(name: str, obj: object) -> str | None:
    if not inspect.isclass(obj):
        return f"is a {type(obj).__name__}, not an agent class"
    return missing(obj, AGENT_MEMBERS)


@functools.cache
def agents() -> dict[str, type]:
    """The built-in agents and those installed packages register (read once)."""
    plugins = load_group(AGENT_GROUP, AGENTS, _agent_class)
    return {**AGENTS, **{name: cls for name, cls in plugins.items() if isinstance(cls, type)}}


def make_agent(name: str, **options: object) -> Agent:
    """The agent called `name`; AgentError (with a did-you-mean) for an unknown one."""
    known = agents()
    if name not in known:
        near = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise AgentError(f"no agent named {name!r} (agents: {', '.join(known)}){hint}")
    agent: Agent = known[name](**options)
    return agent
