#!/usr/bin/env python3
"""skill-optimizer's `mcp` command in the sandbox (docs/formats.md): the subset of mcporter its
workbench gives the agent (`mcp list <server> [--schema]`, `mcp call <server.tool> key=value
...`), over the MCP servers of `$MCPORTER_CONFIG` (default /work/mcporter.json, as the
workbench writes it: {"mcpServers": {name: {"baseUrl": url}}}), speaking MCP's streamable
HTTP. The agent runs it from bash, so its calls are in the trace as skill-optimizer's graders
expect them. Standard library only, run on the image's python3."""

import json
import os
import sys
import urllib.error
import urllib.request

_PROTOCOL = "2025-03-26"
_TIMEOUT = 60


def _config():
    path = os.environ.get("MCPORTER_CONFIG") or "/work/mcporter.json"
    try:
        with open(path, encoding="utf-8") as fh:
            servers = json.load(fh).get("mcpServers") or {}
    except (OSError, ValueError) as exc:
        sys.exit(f"mcp: cannot read {path}: {exc}")
    return servers


class _Session:
    """One MCP session with a streamable-HTTP server: initialize, then requests."""

    def __init__(self, url):
        self.url, self.session, self.ids = url, None, 0
        self.request(
            "initialize",
            {
                "protocolVersion": _PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "mcp", "version": "1"},
            },
        )
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _post(self, message):
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": _PROTOCOL,
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        req = urllib.request.Request(
            self.url, json.dumps(message).encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(req, timeout=_TIMEOUT) as answer:
            self.session = answer.headers.get("Mcp-Session-Id") or self.session
            kind = answer.headers.get("Content-Type", "")
            body = answer.read().decode("utf-8", "replace")
        if "text/event-stream" in kind:  # the answer is one of the events' data
            found = []
            for event in body.split("\n\n"):
                data = "\n".join(
                    line[5:].lstrip() for line in event.splitlines() if line.startswith("data:")
                )
                if data:
                    found.append(json.loads(data))
            return next((m for m in found if m.get("id") == message.get("id")), None)
        return json.loads(body) if body.strip() else None

    def request(self, method, params):
        self.ids += 1
        answer = self._post({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        if not isinstance(answer, dict):
            sys.exit(f"mcp: no answer to {method}")
        if "error" in answer:
            sys.exit(f"mcp: {method}: {answer['error'].get('message', answer['error'])}")
        return answer.get("result") or {}


def _session(servers, name):
    server = servers.get(name)
    url = (server or {}).get("baseUrl") or (server or {}).get("url")
    if not url:
        sys.exit(f"mcp: no server {name!r} (configured: {', '.join(servers) or 'none'})")
    try:
        return _Session(url)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        sys.exit(f"mcp: {name}: {exc}")


def _value(text, kind):
    """A `key=value` value as the tool's schema types it (mcporter's coercion)."""
    if kind in ("number", "integer", "boolean", "object", "array", "null") or kind is None:
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _list(servers, args):
    if not args:
        for name in servers:
            print(name)
        return
    tools = _session(servers, args[0]).request("tools/list", {}).get("tools", [])
    for tool in tools:
        line = f"{args[0]}.{tool.get('name')}: {tool.get('description', '')}"
        print(line)
        if "--schema" in args:
            print("  " + json.dumps(tool.get("inputSchema", {})))


def _call(servers, args):
    if not args or "." not in args[0]:
        sys.exit("mcp: call <server.tool> key=value ...")
    name, tool = args[0].split(".", 1)
    session = _session(servers, name)
    schema: dict = {}
    for found in session.request("tools/list", {}).get("tools", []):
        if found.get("name") == tool:
            schema = (found.get("inputSchema") or {}).get("properties") or {}
    arguments = {}
    rest = args[1:]
    if rest[:1] == ["--args"] and len(rest) > 1:
        arguments = json.loads(rest[1])
        rest = rest[2:]
    for item in rest:
        key, sep, text = item.partition("=")
        if not sep:
            key, sep, text = item.partition(":")
        if not sep:
            sys.exit(f"mcp: {item!r} is not key=value")
        arguments[key] = _value(text, (schema.get(key) or {}).get("type"))
    result = session.request("tools/call", {"name": tool, "arguments": arguments})
    texts = [c.get("text", "") for c in result.get("content", []) if c.get("type") == "text"]
    print("\n".join(texts) if texts else json.dumps(result.get("structuredContent", result)))
    if result.get("isError"):
        sys.exit(1)


def main(argv):
    if not argv or argv[0] not in ("list", "call"):
        sys.exit("usage: mcp list [server] [--schema] | mcp call <server.tool> key=value ...")
    servers = _config()
    (_list if argv[0] == "list" else _call)(servers, argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
