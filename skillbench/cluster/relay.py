"""The driver's model relay (design §18): how sessions on worker nodes reach the model while
the provider keys stay on the driver.

Workers get a base URL on the driver (`http://<driver>:<port>/<provider>`) and a per-run token
where the key would be. The relay accepts a request only with that token and only on a path
the provider's wire uses, swaps the token for the real key, forwards it to the provider's base
URL (joined with the validated path, never with what the worker sent) and streams the answer
back as it arrives. Budgets, exchanges and usage stay where they are for a local run: in the
session's own broker or model client on the worker.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple

import httpx

MAX_BODY = 32 << 20  # bytes of a request body


class Provider(NamedTuple):
    base_var: str  # where the driver's environment may point the provider elsewhere
    default: str
    key_var: str
    paths: frozenset[str]  # the origin-form paths its wire uses, under the base URL
    header: str  # how the key is sent


PROVIDERS = {
    "anthropic": Provider(
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        frozenset({"/v1/messages", "/v1/messages/count_tokens"}),
        "x-api-key",
    ),
    "openai": Provider(
        "OPENAI_BASE_URL",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        frozenset({"/responses", "/chat/completions"}),
        "authorization",
    ),
}
_HOP = {"host", "content-length", "connection", "transfer-encoding", "keep-alive"}
_SECRET = {"x-api-key", "authorization", "proxy-authorization"}


def route(raw: str) -> tuple[str, str] | None:
    """(provider, path) for a request line's target, or None when it is not one the relay
    forwards: origin form only, a known provider prefix, a path from its wire's list (a query
    string is allowed, nothing else)."""
    if not raw.startswith("/") or raw.startswith("//"):
        return None
    path, _, query = raw.partition("?")
    if any(c in path for c in "@%\\#") or "/../" in f"{path}/" or "/./" in f"{path}/":
        return None
    _, name, rest = path.split("/", 2) if path.count("/") >= 2 else ("", "", "")
    provider = PROVIDERS.get(name)
    if provider is None or f"/{rest}" not in provider.paths:
        return None
    return name, f"/{rest}" + (f"?{query}" if query else "")


class DriverRelay:
    """start() it on the address workers reach the driver at; env() is what a worker sets."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.token = secrets.token_urlsafe(32)
        self._keys = {n: os.environ.get(p.key_var, "") for n, p in PROVIDERS.items()}
        self._bases = {n: (os.environ.get(p.base_var) or p.default) for n, p in PROVIDERS.items()}
        self._client = httpx.Client(timeout=httpx.Timeout(600.0, connect=30.0))
        self.refused = 0
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                relay._handle(self)

            do_GET = do_POST

            def log_message(self, format: str, *args: object) -> None:
                pass  # nothing a worker sends is printed

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.host = host
        self.port = self._server.server_address[1]

    def start(self) -> DriverRelay:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def env(self) -> dict[str, str]:
        """The base URLs and the token a worker's session uses instead of the provider's."""
        env = {}
        for name, provider in PROVIDERS.items():
            env[provider.base_var] = f"http://{self.host}:{self.port}/{name}"
            env[provider.key_var] = self.token
        return env

    def _authorised(self, handler: BaseHTTPRequestHandler) -> bool:
        sent = handler.headers.get("x-api-key") or ""
        bearer = handler.headers.get("authorization") or ""
        if bearer.lower().startswith("bearer "):
            sent = sent or bearer[7:]
        return hmac.compare_digest(sent.encode(), self.token.encode())

    def _refuse(self, handler: BaseHTTPRequestHandler, status: int, why: str) -> None:
        self.refused += 1
        body = why.encode()
        handler.send_response(status)
        handler.send_header("content-type", "text/plain")
        handler.send_header("content-length", str(len(body)))
        handler.send_header("connection", "close")
        handler.end_headers()
        handler.wfile.write(body)
        handler.close_connection = True

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        target = route(handler.path)
        if target is None:
            return self._refuse(handler, 404, "not a path this relay forwards")
        if not self._authorised(handler):
            return self._refuse(handler, 401, "unknown token")
        name, path = target
        try:
            length = int(handler.headers.get("content-length") or 0)
        except ValueError:
            return self._refuse(handler, 400, "bad content-length")
        if length > MAX_BODY or handler.headers.get("transfer-encoding"):
            return self._refuse(handler, 413, f"bodies are capped at {MAX_BODY} bytes")
        body = handler.rfile.read(length) if length else b""
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP | _SECRET}
        key = self._keys[name]
        if PROVIDERS[name].header == "x-api-key":
            headers["x-api-key"] = key
        else:
            headers["authorization"] = f"Bearer {key}"
        url = httpx.URL(self._bases[name].rstrip("/") + path.partition("?")[0])
        if "?" in path:
            url = url.copy_with(query=path.partition("?")[2].encode())
        try:
            with self._client.stream(
                handler.command, url, content=body, headers=headers
            ) as upstream:
                handler.send_response(upstream.status_code)
                for k, v in upstream.headers.items():
                    if k.lower() not in _HOP:  # (content-encoding kept: the bytes are raw)
                        handler.send_header(k, v)
                handler.send_header("transfer-encoding", "chunked")
                handler.end_headers()
                for chunk in upstream.iter_raw():
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    handler.wfile.flush()
                handler.wfile.write(b"0\r\n\r\n")
        except httpx.HTTPError as exc:
            with contextlib.suppress(OSError):
                self._refuse(
                    handler, 502, f"the provider could not be reached: {type(exc).__name__}"
                )
        except OSError:
            handler.close_connection = True  # the worker went away mid-answer
