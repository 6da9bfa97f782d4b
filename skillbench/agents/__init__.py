"""The agents an arm can run, by name (docs/agents.md): a registry, not an if-chain. Adding an
agent is one module here and one line in AGENTS."""

from __future__ import annotations

import difflib

from skillbench.agents.base import Agent, AgentError, AgentSession, SessionRequest
from skillbench.agents.builtin.agent import BuiltinAgent
from skillbench.agents.claude_code import ClaudeCodeAgent
from skillbench.agents.codex import CodexAgent
from skillbench.agents.copilot import CopilotAgent
from skillbench.agents.gemini_cli import GeminiCliAgent
from skillbench.agents.opencode import OpenCodeAgent

AGENTS: dict[str, type] = {
    "builtin": BuiltinAgent,
    "claude-code": ClaudeCodeAgent,
    "codex": CodexAgent,
    "opencode": OpenCodeAgent,
    "gemini-cli": GeminiCliAgent,
    "copilot": CopilotAgent,
}
DEFAULT_AGENT = "builtin"

__all__ = ["AGENTS", "Agent", "AgentError", "AgentSession", "SessionRequest", "make_agent"]


def make_agent(name: str, **options: object) -> Agent:
    """The agent called `name`; AgentError (with a did-you-mean) for an unknown one."""
    if name not in AGENTS:
        near = difflib.get_close_matches(name, AGENTS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise AgentError(f"no agent named {name!r} (agents: {', '.join(AGENTS)}){hint}")
    agent: Agent = AGENTS[name](**options)
    return agent
