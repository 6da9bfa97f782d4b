"""A case's `mcp_servers:` (docs/formats.md): MCP servers offered to the agent in its sandbox,
the way Harbor's `[[environment.mcp_servers]]` and skill-optimizer's `mcpServers` declare them.

    mcp_servers:
      calc:                                  # the name the agent's tools carry (mcp__calc__…)
        url: http://calc:8000/mcp            # streamable HTTP: one of the case's services
      notes:
        command: [python3, /work/notes.py]   # stdio: the agent CLI starts it in the sandbox
        env: {MODE: test}

The sandbox has no network, so a URL's host must be one of the case's `services:` (reached
directly in the arm's pod), `localhost`, or a host the agent phase's `network:` lists. Only
the agent CLIs take MCP servers (Claude Code's `--mcp-config`, Codex's `[mcp_servers]`); the
builtin agent has no MCP client, which `eval` says before it runs.
"""

from __future__ import annotations

import re
import shlex
from typing import Any
from urllib.parse import urlsplit

import msgspec

from skillbench.evals.fields import Report
from skillbench.evals.network import parse_entry
from skillbench.evals.yamlsrc import KeyPath

MCP_FIELDS = ("url", "command", "env")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what both CLIs accept in a tool's prefix


class McpServer(msgspec.Struct, frozen=True, kw_only=True):
    """One MCP server: a streamable-HTTP `url`, or a stdio `command` run in the sandbox."""

    name: str
    url: str | None = None
    command: tuple[str, ...] = ()
    env: dict[str, str] = {}


def parse_mcp_servers(
    rep: Report, value: Any, services: set[str], agent_hosts: tuple[str, ...]
) -> tuple[McpServer, ...]:
    if not rep.expect(("mcp_servers",), value, dict, "mcp_servers"):
        return ()
    out = []
    for name, body in value.items():
        at: KeyPath = ("mcp_servers", name)
        if not isinstance(name, str) or not _NAME.match(name):
            rep.error(at, f"MCP server name {name!r} must be letters, digits, `_` or `-`", key=True)
        elif rep.expect(at, body, dict, f"MCP server {name!r}"):
            server = _server(rep, at, name, body, services, agent_hosts)
            if server is not None:
                out.append(server)
    return tuple(out)


def _server(
    rep: Report,
    at: KeyPath,
    name: str,
    body: dict[str, Any],
    services: set[str],
    agent_hosts: tuple[str, ...],
) -> McpServer | None:
    rep.fields(at, body, MCP_FIELDS, f"MCP server {name!r}")
    if ("url" in body) == ("command" in body):
        rep.error(at, f"MCP server {name!r} needs exactly one of `url` (HTTP) or `command` (stdio)")
        return None
    env: dict[str, str] = {}
    if "env" in body and rep.expect((*at, "env"), body["env"], dict, "env"):
        env = {str(k): str(v) for k, v in body["env"].items()}
    if "command" in body:
        command = body["command"]
        argv = (
            shlex.split(command)
            if isinstance(command, str)
            else rep.string_list((*at, "command"), command, "command")
        )
        if not argv:
            rep.error((*at, "command"), "`command` is empty; give the server's command")
            return None
        return McpServer(name=name, command=tuple(argv), env=env)
    url = body["url"]
    if not rep.expect((*at, "url"), url, str, "url"):
        return None
    if env:
        rep.error((*at, "env"), "`env` is for a `command` server; an HTTP server runs elsewhere")
        return None
    problem = unreachable(url, services, agent_hosts)
    if problem:
        rep.error((*at, "url"), f"MCP server {name!r}: {problem}")
        return None
    return McpServer(name=name, url=url, env=env)


def unreachable(url: str, services: set[str], agent_hosts: tuple[str, ...]) -> str | None:
    """Why the agent's sandbox cannot reach `url`, or None when it can."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"`url` {url!r} must be an http:// or https:// URL"
    host = parts.hostname.lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if host in services or host in ("localhost", "127.0.0.1"):
        return None
    for entry in agent_hosts:
        allowed = parse_entry(entry)
        if allowed.host == host and port in allowed.ports:
            return None
    return (
        f"{host}:{port} is neither one of the case's services nor listed in the agent "
        "phase's `network`, and the sandbox reaches nothing else; run the server as a "
        "service or list the host"
    )
