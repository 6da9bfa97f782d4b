"""MCP servers of Harbor tasks and skill-optimizer suites as the case's `mcp_servers:`
(evals/mcp.py; docs/formats.md). A server the agent reaches at a URL maps when its host is one of
the case's services (started in the arm's pod, reached directly); a stdio server maps as the
command the agent CLI starts in its sandbox. Every other one is listed with the reason."""

from __future__ import annotations

import json
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
    """skill-optimizer's `mcpServers` (baseUrl and headers, or command and args) mapped;
    its `mcpServices` (hidden servers run from the case's mcp/ folder) listed, not mapped."""
    hidden = sorted(services) if isinstance(services, dict) else []
    for name in hidden:
        out.unmapped.append(
            f"{where}: mcpServices.{name} — not started: it runs from the case's mcp/ folder, "
            "and a service here runs an image's own files (no host folder is mounted); build "
            "an image holding the server and give the case a `services:` entry for it"
        )
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
            host = (urlsplit(body["baseUrl"]).hostname or "").lower()
            if host in hidden:
                out.unmapped.append(
                    f"{at} — dropped: its server is mcpServices.{host}, not started"
                )
                continue
            server = _url_server(body["baseUrl"], set(), at, out)
        elif isinstance(body.get("command"), str):
            server = _command_server(body["command"], body.get("args"), body.get("env"))
        else:
            out.unmapped.append(f"{at} — neither `baseUrl` nor `command`; dropped")
        if server is not None:
            mapped[str(name)] = server
            out.mapped.append(f"{at} — an MCP server for the agent CLI: {json.dumps(server)}")
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
