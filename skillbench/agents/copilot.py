"""`copilot`: the real GitHub Copilot CLI inside the arm's sandbox (docs/agents.md).

The CLI is a native single-file executable in the npm package
`@github/copilot-linux-x64@<version>`, pinned and cached like Claude Code's. On its first run
it unpacks the JavaScript package it carries (~235 MB) into ~/.cache/copilot; the image build
does that once, inside the build and without network, and moves the package to
/usr/local/lib/copilot, which each session names in COPILOT_CLI_DIST_DIR (so no session unpacks
it again). The build ends by running it there and checking the version it prints.

It runs as the unprivileged `agent` user with a fresh ~/.copilot: the staged skills where it
finds a user's skills (~/.copilot/skills/<name>; its project folders `.github/skills`,
`.agents/skills`, `.claude/skills` would put them in the workspace the checks read),
settings.json turning off the skills it ships, mcp-config.json holding the case's MCP servers,
and copilot-instructions.md the unattended note. It reaches its model only through the
session's broker: BYOK with COPILOT_OFFLINE=true (no GitHub sign-in, telemetry, web tools,
GitHub MCP server or update check), COPILOT_PROVIDER_BASE_URL at the relay and a placeholder
COPILOT_PROVIDER_API_KEY; it speaks Chat Completions (the broker's `openai-chat` wire).
`copilot -p ... --yolo --output-format json` events become the one transcript schema; a load is
its `skill {skill}` call. `--yolo`, not `--allow-all-tools`: 1.0.102 still denies the shell
with the tools alone allowed.

Copilot CLI has no turn cap the broker can rely on, so the broker enforces it. Its first event,
`session.skills_loaded`, lists every skill it found with its source and whether it is enabled:
the contamination guard reads that list, and the enabled ones of its own (`builtin`) are the
session's ambient skills.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from skillbench.agents.base import SessionRequest
from skillbench.agents.builtin.loop import unattended_note
from skillbench.agents.cli import (
    BrokeredSession,
    CliAgent,
    build_image,
    fetch_binary,
    json_events,
    verify_image,
)
from skillbench.evals.mcp import McpServer
from skillbench.models import parse_model
from skillbench.results.transcript import TraceWriter, loaded_skills
from skillbench.sandbox import images_of
from skillbench.sandbox.base import HOMES, Sandbox
from skillbench.sandbox.stage import ContaminationError

VERSION = "1.0.102"  # pinned: the version the tests ran; `[agents.copilot] version`
PACKAGE = "@github/copilot-linux-x64"
MEMBER = "package/copilot"
RELAY_PORT = 8381
CONFIG_DIR = f"{HOMES['agent']}/.copilot"
LIB = "/usr/local/lib/copilot"
DEFAULT_UPSTREAM = "https://api.openai.com/v1"
# the skills 1.0.102 ships (its `session.skills_loaded` event, source "builtin")
BUNDLED = ("customize-cloud-agent", "github-pr-media")
BUILTIN = "builtin"
# the line Copilot CLI adds to a command's output for the model: `<shellId: 0 completed with
# exit code 0>`
_SHELL_END = re.compile(r"<shellId: \d+ completed with exit code -?\d+>\Z")
# the build unpacks the package the executable carries (its first run does: `--version`
# is enough), in a throwaway home, and keeps it where every session finds it
UNPACK = (
    "RUN HOME=/tmp/unpack /usr/local/bin/copilot --version >/dev/null "
    "&& mv /tmp/unpack/.cache/copilot/pkg/linux-x64/{version} " + LIB + " && rm -rf /tmp/unpack"
)


def settings(keep_ambient: bool) -> str:
    """~/.copilot/settings.json: the skills it ships turned off (unless kept), no updates."""
    body: dict[str, Any] = {"autoUpdate": False, "banner": "never"}
    if not keep_ambient:
        body["disabledSkills"] = list(BUNDLED)
    return json.dumps(body, indent=2)


def mcp_config(servers: tuple[McpServer, ...]) -> str:
    """~/.copilot/mcp-config.json: each case MCP server, HTTP or stdio, all its tools."""
    out: dict[str, dict[str, Any]] = {}
    for s in servers:
        if s.url:
            out[s.name] = {"type": "http", "url": s.url, "tools": ["*"]}
        else:
            out[s.name] = {
                "type": "local",
                "command": s.command[0],
                "args": list(s.command[1:]),
                "env": dict(s.env),
                "tools": ["*"],
            }
    return json.dumps({"mcpServers": out}, indent=2)


class CopilotAgent(CliAgent):
    name = "copilot"
    default_version = VERSION
    provider, wire = "openai", "openai-chat"
    api = "OpenAI Chat Completions (its BYOK openai provider)"
    label, size = "Copilot CLI", "130 MB"
    upstream_vars = ("OPENAI_BASE_URL", DEFAULT_UPSTREAM, "OPENAI_API_KEY")
    cap_at_broker = True
    ambient_off = f"settings.json disabledSkills turns off its built-in {', '.join(BUNDLED)}"

    def package(self) -> tuple[str, str]:
        return f"{PACKAGE}@{self._version}", MEMBER

    def image(self, base: str, log: Callable[[str], None]) -> str:
        name = self.image_name(base)
        if images_of().exists(name):
            return name
        spec, member = self.package()
        binary = fetch_binary(self.name, spec, member, self.size, log)
        log(f"building {name} (the sandbox image plus {self.label} {self._version})")
        recipe = (
            f"FROM {base}\nCOPY {binary.name} /usr/local/bin/copilot\n"
            + UNPACK.format(version=self._version)
            + "\n"
        )
        build_image(name, recipe, binary.parent)
        # the executable and the package it unpacked run, and are the version pinned
        probe = (
            f"COPILOT_CLI_DIST_DIR={LIB} HOME=/tmp copilot --version | head -1; "
            f'sed -n \'s/^  "version": "\\([^"]*\\)",$/\\1/p\' {LIB}/package.json'
        )
        words = ["GitHub", "Copilot", "CLI", f"{self._version}.", self._version]
        verify_image(name, probe, words, self.label)
        return name

    async def session(self, request: SessionRequest) -> _Session:
        return _Session(self, request, self.broker(request), RELAY_PORT)

    def invoked(self, events: list[dict[str, Any]]) -> set[str]:
        """The skills the agent loaded: its `skill` calls (and any read of a skill's files,
        as for every agent)."""

        def named(e: dict[str, Any]) -> list[str]:
            if e.get("name") != "skill" or not isinstance(e.get("arguments"), dict):
                return []
            return [str(e["arguments"].get("skill", ""))]

        return loaded_skills(events, named)


class _Session(BrokeredSession):
    config_dir = CONFIG_DIR

    async def prepare(self, sandbox: Sandbox) -> None:
        r = self.request
        await sandbox.write_file(f"{CONFIG_DIR}/settings.json", settings(self.agent.keep_ambient))
        await sandbox.write_file(f"{CONFIG_DIR}/mcp-config.json", mcp_config(r.mcp_servers))
        note = unattended_note(self.workdir) + "\n"
        await sandbox.write_file(f"{CONFIG_DIR}/copilot-instructions.md", note)

    def argv(self) -> list[str]:
        r = self.request
        # routing: only the skill tool, so a prompt shows where it goes and nothing runs
        tools = ("--available-tools", "skill") if r.routing else ()
        return [
            *("copilot", "-p", r.task, "--model", parse_model(r.model).name),
            *("--yolo", "--output-format", "json", "--no-auto-update", "--no-color"),
            *("--no-ask-user", "--disable-builtin-mcps", "--disable-client-telemetry"),
            *tools,
        ]

    def env(self) -> dict[str, str]:
        return {
            "HOME": HOMES["agent"],
            "COPILOT_CLI_DIST_DIR": LIB,  # the package the image unpacked: not again per session
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": f"http://127.0.0.1:{RELAY_PORT}/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_WIRE_API": "completions",
            "COPILOT_PROVIDER_API_KEY": self.broker.client_key,
            "NO_COLOR": "1",
        }

    def replay(self, stdout: str, trace: TraceWriter) -> str | None:
        stop, listed = _replay(stdout, trace)
        staged = {s.name for s in self.request.skills}
        if listed is not None:
            user, bundled = listed
            if staged - user:  # (1.0.102 says why only in `copilot skill list`)
                raise ContaminationError(
                    f"Copilot CLI did not load the staged skills {sorted(staged - user)}: it "
                    "drops a skill whose SKILL.md frontmatter is not valid YAML (quote a "
                    "description holding ': ')"
                )
            if user != staged:  # what Copilot CLI itself found and offers
                raise ContaminationError(
                    f"Copilot CLI listed the skills {sorted(user)}, not the staged {sorted(staged)}"
                )
            self.ambient = tuple(sorted(bundled))
        return stop


def _listed(event: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The enabled skills of a `session.skills_loaded` event: (those not its own, its own)."""
    data = event.get("data")
    skills = data.get("skills") if isinstance(data, dict) else None
    user: set[str] = set()
    bundled: set[str] = set()
    for s in skills if isinstance(skills, list) else ():
        if isinstance(s, dict) and s.get("enabled") is not False:
            (bundled if s.get("source") == BUILTIN else user).add(str(s.get("name", "")))
    return user, bundled


def _replay(stdout: str, trace: TraceWriter) -> tuple[str | None, tuple[set[str], set[str]] | None]:
    """Map `copilot -p --output-format json` events onto the transcript: the stop reason (None
    when no result ended the session) and the skills its first event listed (None: none)."""
    stop: str | None = None
    listed: tuple[set[str], set[str]] | None = None
    names: dict[str, str] = {}  # toolCallId -> our name
    for event in json_events(stdout):
        kind = event.get("type")
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        assert isinstance(data, dict)
        if kind == "session.skills_loaded" and listed is None:
            listed = _listed(event)
        elif kind == "assistant.message":
            if data.get("content"):
                trace.event("message", role="assistant", text=str(data["content"]), usage=None)
        elif kind == "tool.execution_start":
            tid = str(data.get("toolCallId"))
            name, args = _call(data)
            names[tid] = name
            trace.event("tool_call", id=tid, name=name, arguments=args)
        elif kind == "tool.execution_complete":
            _result(data, names, trace)
        elif kind == "session.error":
            stop = "error"
        elif kind == "result":  # (its tokens are counted at the broker)
            stop = "end_turn" if event.get("exitCode") == 0 and stop is None else "error"
    return stop, listed


def _call(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A tool call's name and arguments: `bash` keeps only its command (its `description` is
    the model's note to the user); a case MCP server's tool is named as Claude Code names it
    (mcp__server__tool), so a check reads the same name whichever CLI made the call."""
    raw = data.get("arguments")
    args: dict[str, Any] = raw if isinstance(raw, dict) else {}
    name = str(data.get("toolName", ""))
    if name == "bash":
        return name, {"command": str(args.get("command", ""))}
    if data.get("mcpServerName") and data.get("mcpToolName"):
        return f"mcp__{data['mcpServerName']}__{data['mcpToolName']}", args
    return name, args


def _result(data: dict[str, Any], names: dict[str, str], trace: TraceWriter) -> None:
    tid = str(data.get("toolCallId"))
    result = data.get("result") if isinstance(data.get("result"), dict) else {}
    error = data.get("error") if isinstance(data.get("error"), dict) else {}
    shell = data.get("shellExecution") if isinstance(data.get("shellExecution"), dict) else {}
    assert isinstance(result, dict) and isinstance(error, dict) and isinstance(shell, dict)
    code = shell.get("exitCode")
    failed = data.get("success") is not True
    text = str((error.get("message") if failed and error else result.get("content")) or "")
    if names.get(tid) == "bash":  # (its exit code is `exit_code`)
        text = _SHELL_END.sub("", text)
    trace.event(
        "tool_result",
        id=tid,
        name=names.get(tid, ""),
        text=text,
        is_error=failed or code not in (0, None),
        exit_code=code if isinstance(code, int) else None,
    )
