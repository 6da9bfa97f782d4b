"""`codex`: the real Codex CLI inside the arm's sandbox (docs/agents.md).

The CLI is a static binary in the npm package `@openai/codex@<version>-linux-x64`, pinned and
cached like Claude Code's, baked into its own image variant. It runs as the unprivileged
`agent` user with a fresh CODEX_HOME holding the staged skills where Codex discovers them
(`$CODEX_HOME/skills/<name>/SKILL.md`) and a config whose only model provider is the
session's broker (Responses API over HTTP, no WebSockets; the sandbox holds a placeholder key).
Its approvals and its own sandbox are off: our sandbox is the boundary. `codex exec --json`
events become the one transcript schema: a command is a `bash` call, a patch an `apply_patch`.

Codex has no turn cap of its own, so the broker enforces it (max_requests), and it has no
event listing its skills, so the contamination guard reads the skills list in the first
request Codex sent; the skills it ships (its `.system` ones) are turned off in its config
unless `ambient_skills = "keep"`, and whatever of them it still lists is the session's
ambient skills.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillbench.agents.base import SessionRequest
from skillbench.agents.builtin.loop import unattended_note
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

VERSION = "0.169.0"  # pinned: the version the tests ran; `[agents.codex] version`
PACKAGE = "@openai/codex"
MEMBER = "package/vendor/x86_64-unknown-linux-musl/bin/codex"
RELAY_PORT = 8378
CODEX_HOME = f"{HOMES['agent']}/.codex"
DEFAULT_UPSTREAM = "https://api.openai.com/v1"
# the skill list in Codex's prompt: "- name: description (file: r0/name/SKILL.md)"
_LISTED = re.compile(r"^- ([^:\n]+): .*\(file: (r\d+)/[^\n]*SKILL\.md\)$", re.M)
_ROOT = re.compile(r"^- `(r\d+)` = `([^`]+)`$", re.M)
# What turns off the skills Codex ships under $CODEX_HOME/skills/.system (imagegen,
# openai-docs, skill-creator, skill-installer in 0.169.0; found by running it against the
# fake server and reading its first request): none of them is then listed in its prompt.
AMBIENT_OFF = "[skills.bundled]\nenabled = false\n"


def _config(retries: int, workdir: str, keep_ambient: bool) -> str:
    """CODEX_HOME/config.toml: the broker as the only provider, the unattended note, the
    skills Codex ships off (unless kept), and nothing that reaches for the network on its own
    (each such attempt stalls the exit on a DNS timeout in a sandbox without network)."""
    return (
        'model_provider = "skillbench"\n'
        f"developer_instructions = {json.dumps(unattended_note(workdir))}\n"
        'web_search = "disabled"\n'
        "check_for_update_on_startup = false\n"
        "[analytics]\nenabled = false\n"
        "[features]\nplugins = false\nremote_plugin = false\napps = false\n"
        "in_app_updates = false\nplugin_sharing = false\n"
        "[model_providers.skillbench]\n"
        'name = "skillbench broker"\n'
        f'base_url = "http://127.0.0.1:{RELAY_PORT}/v1"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
        "supports_websockets = false\n"
        f"request_max_retries = {retries}\n"
        f"stream_max_retries = {retries}\n"
    ) + ("" if keep_ambient else AMBIENT_OFF)


def mcp_tables(servers: tuple[McpServer, ...]) -> str:
    """config.toml's `[mcp_servers.<name>]` for each case MCP server, HTTP or stdio."""
    out = ""
    for s in servers:
        out += f"[mcp_servers.{json.dumps(s.name)}]\n"
        if s.url:
            out += f"url = {json.dumps(s.url)}\n"
        else:
            out += f"command = {json.dumps(s.command[0])}\n"
            out += f"args = [{', '.join(json.dumps(a) for a in s.command[1:])}]\n"
            if s.env:
                pairs = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in s.env.items())
                out += f"env = {{ {pairs} }}\n"
    return out


class CodexAgent(CliAgent):
    name = "codex"
    default_version = VERSION
    provider, wire = "openai", "openai"
    api = "the OpenAI Responses API"
    label, size = "Codex", "170 MB"
    upstream_vars = ("OPENAI_BASE_URL", DEFAULT_UPSTREAM, "OPENAI_API_KEY")
    cap_at_broker = True
    # (no secondary_vars: `codex exec` 0.169.0 calls the run's model, its review_model is
    # for /review alone, and its spawn_agent subagents inherit the run's model unless a call
    # names another, which the broker refuses)
    ambient_off = "config.toml [skills.bundled] enabled = false"

    def package(self) -> tuple[str, str]:
        return f"{PACKAGE}@{self._version}-linux-x64", MEMBER

    def image(self, base: str, log: Callable[[str], None]) -> str:
        """The sandbox image plus Codex and the host's ripgrep: Codex 0.169.0 searches with
        `rg` (its prompt tells the model to prefer it), which the base image lacks."""

        def binary() -> Path:
            spec, member = self.package()
            path = fetch_binary(self.name, spec, member, self.size, log)
            host_ripgrep(self.name, path.parent)
            return path

        what = f"{self.label} {self._version}"
        return build_variant(self.image_name(base), base, binary, what, log, also=("rg",))

    async def session(self, request: SessionRequest) -> _Session:
        return _Session(self, request, self.broker(request), RELAY_PORT)

    def invoked(self, events: list[dict[str, Any]]) -> set[str]:
        """The skills the agent loaded: Codex has no skill tool, it reads a skill's SKILL.md
        with a command (which `loaded_skills` finds for every agent)."""
        return loaded_skills(events, lambda e: ())


class _Session(BrokeredSession):
    config_dir = CODEX_HOME
    sealed_home = False  # it installs its own skills under skills/.system at start-up

    async def prepare(self, sandbox: Sandbox) -> None:
        await sandbox.write_file(
            f"{CODEX_HOME}/config.toml",
            _config(self.agent.max_retries, self.workdir, self.agent.keep_ambient)
            + mcp_tables(self.request.mcp_servers),
        )

    def argv(self) -> list[str]:
        r = self.request
        return [
            *("codex", "exec", "--json", "--strict-config", "--skip-git-repo-check", "--ephemeral"),
            *("--dangerously-bypass-approvals-and-sandbox", "--color", "never"),
            *("-m", parse_model(r.model).name, "-C", self.workdir, r.task),
        ]

    def env(self) -> dict[str, str]:
        return {"CODEX_HOME": CODEX_HOME, "OPENAI_API_KEY": self.broker.client_key, "NO_COLOR": "1"}

    def replay(self, stdout: str, trace: TraceWriter) -> str | None:
        stop = _replay(stdout, trace)
        listed = _listed(self.broker.first_request)
        staged = {s.name for s in self.request.skills}
        if listed is not None:
            user, bundled = listed
            if user != staged:  # what Codex itself was shown
                raise ContaminationError(
                    f"Codex listed the skills {sorted(user)}, not the staged {sorted(staged)}"
                )
            self.ambient = tuple(sorted(bundled))
        return stop


def _listed(request: dict[str, Any] | None) -> tuple[set[str], set[str]] | None:
    """The skills of Codex's prompt: (outside its own bundled `.system` ones, the bundled
    ones); None when Codex sent no request."""
    if request is None:
        return None
    text = _plain_text(request)
    roots = {key: path for key, path in _ROOT.findall(text)}
    user: set[str] = set()
    bundled: set[str] = set()
    for name, root in _LISTED.findall(text):
        own = roots.get(root, "").rstrip("/").endswith("/.system")
        (bundled if own else user).add(name)
    return user, bundled


def _plain_text(request: dict[str, Any]) -> str:
    parts = [str(request.get("instructions") or "")]
    for item in request.get("input") or []:
        if isinstance(item, dict) and isinstance(item.get("content"), list):
            parts += [str(c.get("text", "")) for c in item["content"] if isinstance(c, dict)]
    return "\n".join(parts)


def _command(raw: str) -> str:
    """The command the model wrote: Codex runs it as `/bin/bash -lc '<command>'`."""
    try:
        words = shlex.split(raw)
    except ValueError:
        return raw
    if len(words) == 3 and words[0].endswith(("bash", "sh")) and words[1] in ("-lc", "-c"):
        return words[2]
    return raw


def _replay(stdout: str, trace: TraceWriter) -> str | None:
    """Map `codex exec --json` events onto the transcript; the stop reason (None when the
    stream has no end of turn)."""
    stop: str | None = None
    for event in json_events(stdout):
        kind = event.get("type")
        item = event.get("item") or {}
        if kind == "item.completed" and item.get("type") == "agent_message":
            trace.event("message", role="assistant", text=str(item.get("text", "")), usage=None)
        elif kind == "item.completed" and item.get("type") == "command_execution":
            tid = str(item.get("id"))
            trace.event(
                "tool_call",
                id=tid,
                name="bash",
                arguments={"command": _command(str(item.get("command", "")))},
            )
            code = item.get("exit_code")
            trace.event(
                "tool_result",
                id=tid,
                name="bash",
                text=str(item.get("aggregated_output", "")),
                is_error=code not in (0, None),
                exit_code=code,
            )
        elif kind == "item.completed" and item.get("type") == "file_change":
            tid = str(item.get("id"))
            trace.event(
                "tool_call",
                id=tid,
                name="apply_patch",
                arguments={"changes": item.get("changes") or []},
            )
            trace.event(
                "tool_result",
                id=tid,
                name="apply_patch",
                text=str(item.get("status", "")),
                is_error=item.get("status") == "failed",
                exit_code=None,
            )
        elif kind == "item.completed" and item.get("type") == "mcp_tool_call":
            _mcp_call(item, trace)
        elif kind == "turn.completed":  # (its usage is counted at the broker)
            stop = "end_turn"
        elif kind == "turn.failed":
            stop = "error"
    return stop


def _mcp_call(item: dict[str, Any], trace: TraceWriter) -> None:
    """A call of a case MCP server's tool, named as Claude Code names it (mcp__server__tool),
    so a check reads the same name whichever CLI made the call."""
    tid, name = str(item.get("id")), f"mcp__{item.get('server')}__{item.get('tool')}"
    trace.event("tool_call", id=tid, name=name, arguments=item.get("arguments") or {})
    result, error = item.get("result"), item.get("error")
    result = result if isinstance(result, dict) else {}
    error = error if isinstance(error, dict) else {}
    blocks = result.get("content") or []
    text = "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
    trace.event(
        "tool_result",
        id=tid,
        name=name,
        text=text or str(error.get("message", "")),
        is_error=bool(error) or item.get("status") == "failed",
        exit_code=None,
    )
