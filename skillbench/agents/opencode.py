"""`opencode`: the real OpenCode CLI inside the arm's sandbox.

The CLI is a Bun-compiled native binary in the npm package `opencode-linux-x64@<version>`,
pinned and cached like Claude Code's and baked into its own image variant together with
ripgrep (its `skill` tool lists a skill's files with `rg` and fails without it). It runs as
the unprivileged `agent` user with the staged skills where OpenCode finds a user's skills
(`~/.config/opencode/skills/<name>/SKILL.md`) and an opencode.json whose only provider is
the session's broker (the Anthropic provider with its base URL at the relay, a placeholder
key), every permission granted (our sandbox is the boundary) and its own network habits off.
`opencode run --format json` events become the one transcript schema.

OpenCode has no turn cap of its own, so the broker enforces it. Its system prompt lists the
skills it will offer (`<available_skills>`): the contamination guard reads that list in the
session's first request; the skills it ships (`<location><built-in>`; `customize-opencode` in
1.18.33) are denied by its `permission.skill` setting unless `ambient_skills = "keep"`.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillbench.agents.base import SessionRequest
from skillbench.agents.builtin.loop import UNATTENDED_NOTE, unattended_note
from skillbench.agents.cli import (
    BrokeredSession,
    CliAgent,
    build_variant,
    fetch_binary,
    host_ripgrep,
    json_events,
)
from skillbench.evals.mcp import McpServer
from skillbench.models import parse_model
from skillbench.results.transcript import TraceWriter, loaded_skills
from skillbench.sandbox.base import HOMES, Sandbox
from skillbench.sandbox.stage import ContaminationError

VERSION = "1.18.33"  # pinned: the version the tests ran; `[agents.opencode] version`
PACKAGE = "opencode-linux-x64"
MEMBER = "package/bin/opencode"
RELAY_PORT = 8379
CONFIG_DIR = f"{HOMES['agent']}/.config/opencode"
DEFAULT_UPSTREAM = "https://api.anthropic.com"
# the skills its system prompt offers: <skill><name>N</name>…<location>L</location></skill>
_LISTED = re.compile(r"<skill>\s*<name>([^<]+)</name>.*?<location>([^<]*)</location>", re.S)
BUILT_IN = "<built-in>"
SESSION_PROMPT = UNATTENDED_NOTE.split(";")[0]  # a clause of what config() makes its prompt
# the skills 1.18.33 ships (read from its system prompt against the fake server)
BUNDLED = ("customize-opencode",)
# tools a routing session must not have: only `skill` shows where a prompt goes
_WORK_TOOLS = (
    *("bash", "edit", "write", "read", "glob", "grep", "list", "patch", "task"),
    *("webfetch", "todowrite", "todoread"),
)


def config(model: str, workdir: str, keep_ambient: bool, routing: bool, mcp: str) -> str:
    """opencode.json: the broker as the only provider (the run's model for its title and
    summary calls too, which default to a small model the broker would refuse), every
    permission allowed, nothing fetched or shared, the CLI's own skills denied."""
    permission: dict[str, Any] = {"*": "allow", "external_directory": "allow"}
    if not keep_ambient:
        permission["skill"] = {"*": "allow", **dict.fromkeys(BUNDLED, "deny")}
    body: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "model": f"anthropic/{model}",
        "small_model": f"anthropic/{model}",
        "autoupdate": False,
        "share": "disabled",
        "instructions": [],
        "provider": {
            "anthropic": {
                "options": {
                    "baseURL": f"http://127.0.0.1:{RELAY_PORT}/v1",
                    "apiKey": "{env:ANTHROPIC_API_KEY}",  # the session's own key, not on disk
                },
                # declared, so a model its bundled catalog does not list (a newer one, or the
                # scripted driver's `demo`) is one it runs, not "model not found"; a listed
                # model keeps the catalog's limits (an entry's fields override, none are given)
                "models": {model: {}},
            }
        },
        "permission": permission,
        "agent": {"build": {"prompt": unattended_note(workdir)}},
        "mcp": json.loads(mcp),
    }
    if routing:
        body["tools"] = dict.fromkeys(_WORK_TOOLS, False)
    return json.dumps(body, indent=2)


def mcp_entries(servers: tuple[McpServer, ...]) -> str:
    """opencode.json's `mcp`: each case MCP server, remote (HTTP) or local (stdio)."""
    out: dict[str, dict[str, Any]] = {}
    for s in servers:
        if s.url:
            out[s.name] = {"type": "remote", "url": s.url, "enabled": True}
        else:
            out[s.name] = {
                "type": "local",
                "command": list(s.command),
                "environment": dict(s.env),
                "enabled": True,
            }
    return json.dumps(out)


class OpenCodeAgent(CliAgent):
    name = "opencode"
    default_version = VERSION
    provider, wire = "anthropic", "anthropic"
    api = "the Anthropic API (its Anthropic provider)"
    label, size = "OpenCode", "60 MB"
    upstream_vars = ("ANTHROPIC_BASE_URL", DEFAULT_UPSTREAM, "ANTHROPIC_API_KEY")
    cap_at_broker = True
    # 1.18.33 retries a failed call on its own with no setting to cap it (its SessionRetry
    # limit is a constant): the broker forwards a question max_retries + 1 times, no more,
    # and OpenCode reports the refusal as an `error` event
    retries_at_broker = True
    ambient_off = "opencode.json permission.skill denies its built-in skills"

    def package(self) -> tuple[str, str]:
        return f"{PACKAGE}@{self._version}", MEMBER

    def image(self, base: str, log: Callable[[str], None]) -> str:
        def binary() -> Path:
            spec, member = self.package()
            path = fetch_binary(self.name, spec, member, self.size, log)
            host_ripgrep(self.name, path.parent)
            return path

        return build_variant(
            self.image_name(base),
            base,
            binary,
            f"{self.label} {self._version}",
            log,
            also=("rg",),
        )

    async def session(self, request: SessionRequest) -> _Session:
        return _Session(self, request, self.broker(request), RELAY_PORT)

    @staticmethod
    def opens_session(request: dict[str, Any]) -> bool:
        """Its session's calls carry its build agent's prompt (config()) in their system
        prompt; its title call, sent first, has another (a task may quote the prompt)."""
        return SESSION_PROMPT in _system(request)

    def invoked(self, events: list[dict[str, Any]]) -> set[str]:
        """The skills the agent loaded: its `skill` tool calls."""

        def named(e: dict[str, Any]) -> list[str]:
            if e.get("name") != "skill" or not isinstance(e.get("arguments"), dict):
                return []
            return [str(e["arguments"].get("name", ""))]

        return loaded_skills(events, named)


class _Session(BrokeredSession):
    config_dir = CONFIG_DIR

    async def prepare(self, sandbox: Sandbox) -> None:
        r = self.request
        await sandbox.write_file(
            f"{CONFIG_DIR}/opencode.json",
            config(
                parse_model(r.model).name,
                self.workdir,
                self.agent.keep_ambient,
                r.routing,
                mcp_entries(r.mcp_servers),
            ),
        )

    def argv(self) -> list[str]:
        r = self.request
        model = f"anthropic/{parse_model(r.model).name}"
        return ["opencode", "run", "--format", "json", "-m", model, r.task]

    def env(self) -> dict[str, str]:
        return {
            "HOME": HOMES["agent"],
            "XDG_CONFIG_HOME": f"{HOMES['agent']}/.config",
            "OPENCODE_CONFIG": f"{CONFIG_DIR}/opencode.json",
            "ANTHROPIC_API_KEY": self.broker.client_key,
            # nothing reaches for the network on its own (each attempt stalls in a sandbox
            # without one): no self-update, no default plugins, no models list, no LSPs
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            # the user-level Claude Code skills it would also read are not the run's
            "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            "NO_COLOR": "1",
        }

    def replay(self, stdout: str, trace: TraceWriter) -> str | None:
        stop = _replay(stdout, trace)
        listed = _listed(self.broker.first_request)
        staged = {s.name for s in self.request.skills}
        if listed is None and sum(self.broker.model_calls.values()) > 1:
            # calls beyond its title call, none of them with skillbench's prompt: the case's
            # workspace set another (what it offered the model cannot be read)
            raise ContaminationError(
                "OpenCode's session prompt is not the one skillbench gives it (a workspace "
                "opencode.json or .opencode/agent/build.md that sets the build agent's "
                "prompt?), so the skills it offered the model cannot be checked"
            )
        if listed is not None:
            user, bundled = listed
            if user != staged:  # what OpenCode itself offered the model
                raise ContaminationError(
                    f"OpenCode listed the skills {sorted(user)}, not the staged {sorted(staged)}"
                )
            self.ambient = tuple(sorted(bundled))
        return stop


def _listed(request: dict[str, Any] | None) -> tuple[set[str], set[str]] | None:
    """The skills OpenCode's system prompt offers in its session's first call: (the staged
    and any other user-level ones, its built-in ones); None when it sent no such call."""
    if request is None:
        return None
    text = _system(request)
    user: set[str] = set()
    bundled: set[str] = set()
    for name, where in _LISTED.findall(text):
        (bundled if html.unescape(where) == BUILT_IN else user).add(name.strip())
    return user, bundled


def _system(request: dict[str, Any]) -> str:
    """The text of a Messages request's system prompt."""
    system = request.get("system")
    blocks = system if isinstance(system, list) else [{"text": system or ""}]
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))


def _replay(stdout: str, trace: TraceWriter) -> str | None:
    """Map `opencode run --format json` events onto the transcript; the stop reason (None
    when no step ended the turn)."""
    stop: str | None = None
    for event in json_events(stdout):
        kind, part = event.get("type"), event.get("part") or {}
        if kind == "text" and part.get("text"):
            trace.event("message", role="assistant", text=str(part["text"]), usage=None)
        elif kind == "tool_use":
            _tool(part, trace)
        elif kind == "step_start":  # a step begun is the turn not ended, until it finishes
            stop = None
        elif kind == "step_finish":  # (its tokens are counted at the broker)
            stop = "end_turn" if part.get("reason") == "stop" else None
        elif kind == "error":
            stop = "error"
    return stop


def _tool(part: dict[str, Any], trace: TraceWriter) -> None:
    """One finished tool call: its call and its result. A case MCP server's tool, which
    OpenCode names `<server>_<tool>`, keeps that name."""
    state = part.get("state") or {}
    tid, name = str(part.get("callID") or part.get("id")), str(part.get("tool", ""))
    raw, meta = state.get("input"), state.get("metadata")
    args: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if name == "bash":
        args = {"command": str(args.get("command", ""))}
    trace.event("tool_call", id=tid, name=name, arguments=args)
    metadata: dict[str, Any] = meta if isinstance(meta, dict) else {}
    failed = state.get("status") == "error"
    text = state.get("error") if failed else state.get("output")
    code = metadata.get("exit") if name == "bash" else None
    trace.event(
        "tool_result",
        id=tid,
        name=name,
        text=str(text or ""),
        is_error=failed or code not in (0, None),
        exit_code=code,
    )
