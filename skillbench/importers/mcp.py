"""MCP servers of Harbor tasks and skill-optimizer suites as the case's `mcp_servers:`
(evals/mcp.py; docs/formats.md). A server the agent reaches at a URL maps when its host is one of
the case's services (started in the arm's pod, reached directly); a stdio server maps as the
command the agent CLI starts in its sandbox. Every other one is listed with the reason."""

from __future__ import annotations

import json
import shlex
from typing import Any
from urllib.parse import urlsplit

from skillbench.importers.base import Imported

_HTTP = ("streamable-http", "http")


def harbor_mcp(entries: Any, services: set[str], where: str, out: Imported) -> dict[str, Any]:
    """Harbor's `[[environment.mcp_servers]]` (name, transport, url or command and args)."""
    mapped: dict[str, Any] = {}
    if not isinstance(entries, list):
        out.unmapped.append(f"{where}: environment.mcp_servers — not a list of tables; dropped")
        return mapped
    for i, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        at = f"{where}: environment.mcp_servers[{i}]" + (f" ({name})" if name else "")
        if not isinstance(name, str) or not name:
            out.unmapped.append(f"{at} — it has no `name`; dropped")
            continue
        transport = str(entry.get("transport") or ("stdio" if entry.get("command") else "http"))
        if transport in _HTTP and isinstance(entry.get("url"), str):
            server = _url_server(entry["url"], services, at, out)
        elif transport == "stdio" and isinstance(entry.get("command"), str):
            server = _command_server(entry["command"], entry.get("args"), entry.get("env"))
        else:
            out.unmapped.append(
                f"{at} — transport {transport!r}: only streamable HTTP (with `url`) and stdio "
                "(with `command`) are given to the agent CLIs; dropped"
            )
            continue
        if server is not None:
            mapped[name] = server
            out.mapped.append(f"{at} — an MCP server for the agent CLI: {json.dumps(server)}")
    return mapped


def optimizer_mcp(servers: Any, services: Any, where: str, out: Imported) -> dict[str, Any]:
    """skill-optimizer's `mcpServers` (baseUrl and headers, or command and args) mapped; a
    server at one of its `mcpServices` (optimizer_services) is reached in the arm's pod."""
    hidden = sorted(str(n) for n in services) if isinstance(services, dict) else []
    mapped: dict[str, Any] = {}
    if not isinstance(servers, dict):
        return mapped
    for name, body in servers.items():
        at = f"{where}: mcpServers.{name}"
        if not isinstance(body, dict):
            out.unmapped.append(f"{at} — not a mapping; dropped")
            continue
        if body.get("headers"):
            out.unmapped.append(
                f"{at} — dropped: it sends headers (credentials from host variables), and "
                "host variables never enter a sandbox"
            )
            continue
        server = None
        if isinstance(body.get("baseUrl"), str):
            server = _url_server(body["baseUrl"], set(hidden), at, out)
        elif isinstance(body.get("command"), str):
            server = _command_server(body["command"], body.get("args"), body.get("env"))
        else:
            out.unmapped.append(f"{at} — neither `baseUrl` nor `command`; dropped")
        if server is not None:
            mapped[str(name)] = server
            out.mapped.append(f"{at} — an MCP server for the agent CLI: {json.dumps(server)}")
    return mapped


def optimizer_services(
    services: Any, servers: Any, case: str, has_mcp: bool, where: str, out: Imported
) -> dict[str, Any]:
    """skill-optimizer's `mcpServices` as the case's services, run as its workbench runs them
    (src/workbench/docker-runner.ts): in the agent's own image, from the case's mcp/ folder
    at /mcp (copied in here, never mounted), `/bin/sh -lc "<command> <args>"`, reached by its
    name; ready once the port of its `mcpServers` URL answers (the workbench waits for
    `mcporter list`)."""
    mapped: dict[str, Any] = {}
    for name, body in (services or {}).items() if isinstance(services, dict) else ():
        at = f"{where}: mcpServices.{name}"
        url = (servers or {}).get(name, {}).get("baseUrl") if isinstance(servers, dict) else None
        command = body.get("command") if isinstance(body, dict) else None
        if not isinstance(command, str) or not isinstance(url, str):
            out.unmapped.append(
                f"{at} — dropped: it needs `command` and an `mcpServers.{name}` with `baseUrl` "
                "(skill-optimizer refuses it without them)"
            )
            continue
        if not has_mcp:
            out.unmapped.append(f"{at} — dropped: the case has no mcp/ folder to run it from")
            continue
        args = body.get("args") if isinstance(body.get("args"), list) else []
        port = urlsplit(url).port or (443 if url.startswith("https") else 80)
        probe = f"import socket; socket.create_connection(('localhost', {port}), timeout=2)"
        mapped[str(name)] = {
            "command": [
                "/bin/sh",
                "-lc",
                "cd /mcp && exec " + shlex.join([command, *map(str, args)]),
            ],
            "files": {"/mcp": f"{case}/mcp"},
            "healthcheck": {"test": ["python3", "-c", probe], "timeout": 30},
        }
        out.mapped.append(
            f"{at} — a service in the arm's pod, run from the case's mcp/ (copied to /mcp) in "
            f"the agent's image, as skill-optimizer runs it; ready once port {port} answers"
        )
    return mapped


def _url_server(url: str, services: set[str], at: str, out: Imported) -> dict[str, Any] | None:
    host = (urlsplit(url).hostname or "").lower()
    if host in services or host in ("localhost", "127.0.0.1"):
        return {"url": url}
    out.unmapped.append(
        f"{at} — dropped: {url} is not one of the case's services and the agent's sandbox "
        "has no network; run it as a service, or list its host in the case's `network.agent` "
        "and add it to `mcp_servers` by hand"
    )
    return None


def _command_server(command: str, args: Any, env: Any) -> dict[str, Any]:
    argv = [command, *(str(a) for a in args)] if isinstance(args, list) else [command]
    server: dict[str, Any] = {"command": argv}
    if isinstance(env, dict) and env:
        server["env"] = {str(k): str(v) for k, v in env.items()}
    return server
