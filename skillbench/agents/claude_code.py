"""`claude-code`: the real Claude Code CLI inside the arm's sandbox (docs/agents.md).

The CLI comes from the npm registry (the native binary ships in
`@anthropic-ai/claude-code-linux-x64`; no node at run time), pinned and cached by version
under ~/.cache/skillbench/agents/, and baked into an image variant of the sandbox image. It runs
as the unprivileged `agent` user with a fresh config dir holding the staged skill as a real
Claude Code skill and a settings.json that turns off the skills Claude Code ships (the
ambient skills, which would compete with the staged one; `ambient_skills = "keep"` keeps
them), and reaches its model only through the session's
broker (the sandbox holds a placeholder key). Its stream-json events become the one
transcript schema; its `Bash` calls are `bash` commands for the checks.
"""

from __future__ import annotations

import json
from typing import Any

from skillbench.agents.base import SessionRequest
from skillbench.agents.builtin.loop import unattended_note
from skillbench.agents.cli import BrokeredSession, CliAgent, json_events
from skillbench.evals.mcp import McpServer
from skillbench.models import parse_model
from skillbench.models.base import Usage, anthropic_usage
from skillbench.results.transcript import TraceWriter, loaded_skills
from skillbench.sandbox.base import HOMES, Sandbox
from skillbench.sandbox.stage import ContaminationError

VERSION = "2.1.332"  # pinned: the version the tests ran; `[agents.claude-code] version`
PACKAGE = "@anthropic-ai/claude-code-linux-x64"
RELAY_PORT = 8377  # the broker's address inside the sandbox: http://127.0.0.1:8377
CONFIG_DIR = f"{HOMES['agent']}/.claude"
MCP_CONFIG = f"{CONFIG_DIR}/skillbench-mcp.json"
DEFAULT_UPSTREAM = "https://api.anthropic.com"
# What turns off the skills 2.1.332 ships (found by running it against the fake server and
# reading its init event): `disableBundledSkills` removes the bundled ones; the builtin plugins
# its init event lists bring `plugin-authoring`; `doctor` survives the kill switch and goes by
# name (never when a staged skill has that name: the override would hide it too).
BUILTIN_PLUGINS = (
    "cc-plugin-agents-md@builtin",
    "cc-plugin-privacy@builtin",
    "cc-plugin-plugin-authoring@builtin",
)
SURVIVORS = ("doctor",)


def settings(staged: set[str]) -> str:
    """$CLAUDE_CONFIG_DIR/settings.json: the CLI's own skills off."""
    return json.dumps(
        {
            "disableBundledSkills": True,
            "enabledPlugins": dict.fromkeys(BUILTIN_PLUGINS, False),
            "skillOverrides": {name: "off" for name in SURVIVORS if name not in staged},
        },
        indent=2,
    )


class ClaudeCodeAgent(CliAgent):
    name = "claude-code"
    default_version = VERSION
    provider, wire = "anthropic", "anthropic"
    key_prefix = "sk-ant-placeholder"
    api = "the Anthropic API"
    label, size = "Claude Code", "190 MB"
    upstream_vars = ("ANTHROPIC_BASE_URL", DEFAULT_UPSTREAM, "ANTHROPIC_API_KEY")
    # The model aliases and the subagent model of 2.1.332, read in its bundle: `sonnet`,
    # `opus`, `fable` (and `opusplan`, `best`, which resolve through them) are
    # ANTHROPIC_DEFAULT_<ALIAS>_MODEL; a subagent asks for an alias (the Agent tool's `model`,
    # an agent's frontmatter) or CLAUDE_CODE_SUBAGENT_MODEL, else inherits. Unset, an alias
    # is Anthropic's current model of that family, which the broker refuses (the subagent
    # dies with "API Error: 400"): all of them are pointed at the run's model.
    alias_vars = (
        "ANTHROPIC_DEFAULT_SONNET_MODEL",
        "ANTHROPIC_DEFAULT_OPUS_MODEL",
        "ANTHROPIC_DEFAULT_FABLE_MODEL",
        "CLAUDE_CODE_SUBAGENT_MODEL",
    )
    # Its "small fast model" (background calls) and the `haiku` alias: the run's model too,
    # or `[agents.claude-code] secondary_model` when set (the broker then allows that model,
    # priced as itself).
    secondary_vars = ("ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL")
    ambient_off = "settings.json disableBundledSkills, its builtin plugins and `doctor` off"

    def package(self) -> tuple[str, str]:
        return f"{PACKAGE}@{self._version}", "package/claude"

    async def session(self, request: SessionRequest) -> _Session:
        return _Session(self, request, self.broker(request), RELAY_PORT)

    def invoked(self, events: list[dict[str, Any]]) -> set[str]:
        """The skills the agent loaded in a transcript: its `Skill` tool calls (a plugin's
        skill is `plugin:name`)."""

        def named(e: dict[str, Any]) -> list[str]:
            if e.get("name") != "Skill" or not isinstance(e.get("arguments"), dict):
                return []
            # as Claude Code reads the name (2.1.332): trimmed, one leading "/" dropped (a
            # slash command's spelling), so `/greeter` and ` greeter` load greeter too
            name = str(e["arguments"].get("skill", "")).strip()
            return [name.removeprefix("/").rsplit(":", 1)[-1]]

        return loaded_skills(events, named)


def mcp_config(servers: tuple[McpServer, ...]) -> str:
    """The file `--mcp-config` reads: each case MCP server, HTTP or stdio."""
    entries: dict[str, dict[str, Any]] = {}
    for s in servers:
        if s.url:
            entries[s.name] = {"type": "http", "url": s.url}
        else:
            entries[s.name] = {
                "type": "stdio",
                "command": s.command[0],
                "args": list(s.command[1:]),
                "env": s.env,
            }
    return json.dumps({"mcpServers": entries}, indent=2)


class _Session(BrokeredSession):
    config_dir = CONFIG_DIR

    async def prepare(self, sandbox: Sandbox) -> None:
        if not self.agent.keep_ambient:
            staged = {s.name for s in self.request.skills}
            await sandbox.write_file(f"{CONFIG_DIR}/settings.json", settings(staged))
        if self.request.mcp_servers:
            await sandbox.write_file(MCP_CONFIG, mcp_config(self.request.mcp_servers))

    def argv(self) -> list[str]:
        r = self.request
        # routing: only the Skill tool, so a prompt shows where it goes and nothing runs
        tools = ("--tools", "Skill") if r.routing else ()
        # the case's MCP servers and no other (a user's or project's .mcp.json is not ours)
        mcp = ("--mcp-config", MCP_CONFIG, "--strict-mcp-config") if r.mcp_servers else ()
        return [
            *("claude", "-p", r.task, "--output-format", "stream-json", "--verbose"),
            *("--dangerously-skip-permissions", *tools, *mcp),
            *("--model", parse_model(r.model).name, "--max-turns", str(r.max_turns)),
            *("--append-system-prompt", unattended_note(self.workdir)),
        ]

    def env(self) -> dict[str, str]:
        return {
            **self.agent.aliases(self.request.model),
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{RELAY_PORT}",
            "ANTHROPIC_API_KEY": self.broker.client_key,
            "CLAUDE_CONFIG_DIR": CONFIG_DIR,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_MAX_RETRIES": str(self.agent.max_retries),
        }

    def replay(self, stdout: str, trace: TraceWriter) -> str | None:
        stop, seen = _replay(stdout, trace)
        staged = {s.name for s in self.request.skills}
        missing = staged - set(seen or [])
        if seen is not None and missing:  # the guard reads what the agent itself reports
            raise ContaminationError(
                f"Claude Code's init event lists {sorted(seen)}, not the "
                f"staged skill(s) {sorted(missing)}"
            )
        self.ambient = tuple(sorted(set(seen or []) - staged))
        return stop


_STOPS = {"success": "end_turn"}


def _replay(stdout: str, trace: TraceWriter) -> tuple[str | None, list[str] | None]:
    """Map Claude Code's stream-json onto the transcript. Returns (the stop reason, None when
    the stream has no result; the skills its init event listed)."""
    names: dict[str, str] = {}  # tool_use id -> our name
    stop: str | None = None
    skills: list[str] | None = None
    for event in json_events(stdout):
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            skills = [str(s) for s in event.get("skills") or []]
        elif kind == "assistant":
            message = event.get("message") or {}
            for block in message.get("content") or []:
                if block.get("type") == "text" and block.get("text"):
                    trace.event(
                        "message",
                        role="assistant",
                        text=block["text"],
                        usage=_usage(message.get("usage")),
                    )
                elif block.get("type") == "tool_use":
                    name = "bash" if block.get("name") == "Bash" else str(block.get("name"))
                    names[str(block.get("id"))] = name
                    trace.event(
                        "tool_call",
                        id=block.get("id"),
                        name=name,
                        arguments=block.get("input") or {},
                    )
        elif kind == "user":
            for block in (event.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    tid = str(block.get("tool_use_id"))
                    said = _text(block.get("content"))
                    trace.event(
                        "tool_result",
                        id=tid,
                        name=names.get(tid, ""),
                        text=said,
                        is_error=bool(block.get("is_error")),
                        exit_code=None,
                        # Claude Code's answer to a call it did not run (no such tool, input its
                        # schema refuses): the command never ran
                        refused=said.startswith("<tool_use_error>"),
                    )
        elif kind == "result":
            # the turn cap is the agent's own end; otherwise a CLI that gave up on its model
            # (its retries spent) says so with is_error: infrastructure
            subtype = str(event.get("subtype"))
            if subtype == "error_max_turns":
                stop = "max_turns"
            else:
                stop = "error" if event.get("is_error") else _STOPS.get(subtype, "error")
    return stop, skills


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return anthropic_usage(raw)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""
