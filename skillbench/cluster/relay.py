"""The driver's model relay (docs/scale-out.md): how sessions on worker nodes reach the model while
the provider keys stay on the driver.

Workers get a base URL on the driver (`http://<driver>:<port>/<provider>`) and a per-run token
where the key would be. The relay accepts a request only with that token and only on a path
the provider's wire uses, swaps the token for the real key, forwards it to the provider's base
URL (joined with the validated path, never with what the worker sent) and streams the answer
back as it arrives. Exchanges and usage stay where they are for a local run (in the session's
own broker or model client on the worker), but the worker is not trusted to have applied the
broker's rules: the relay applies them again with the broker's own functions (the wire's
endpoints, POST only, the body cap, the run's models, one choice, no server tools, no content
fetched by URL, no background generation), holds each call's worst case against the run's
--max-cost before it is forwarded, and settles it with the broker's bill (broker_billing: the
usage a stream would leave out is asked for, server-tool fees count, a call cut before its
final usage costs its reservation).
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

import httpx
import msgspec

from skillbench.broker.billing import UsageChunks, bill, may_have_run, with_usage
from skillbench.broker.limits import Ledger, Refused, read_body
from skillbench.broker.wire import RESPONSE_DROPPED, WIRES, Route, Wire, route, upstream_url
from skillbench.models.ledger import RunLedger
from skillbench.models.pricing import Price, worst_case_usd
from skillbench.util.conncap import ConnectionCap


class Provider(NamedTuple):
    base_var: str  # where the driver's environment may point the provider elsewhere
    default: str
    key_var: str
    wire: str  # the broker's wire (broker_wire.WIRES)


PROVIDERS = {
    "anthropic": Provider(
        "ANTHROPIC_BASE_URL", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "anthropic"
    ),
    "openai": Provider("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY", "openai"),
    # the Gemini API: the model is in the path (checked like a body's), the key a header
    "google": Provider(
        "GOOGLE_GEMINI_BASE_URL",
        "https://generativelanguage.googleapis.com",
        "GEMINI_API_KEY",
        "gemini",
    ),
}
# The relay listens where workers reach the driver, so anyone who reaches that address can
# connect: a connection waits this long for its client before it is closed, and at most
# MAX_CONNECTIONS get a thread (the longest idle is closed to make room for a new one). The
# cap is well above the calls a run's workers make at once (each session has at most
# Broker.MAX_CONCURRENT in flight).
READ_DEADLINE = 60.0
MAX_CONNECTIONS = 512


def _below_base(wire: Wire) -> Wire:
    """The wire with its endpoints named as a client of the base URL sends them (the worker's
    broker or SDK joins the endpoint's path to the relay's base URL, `.../<provider>`)."""
    routes = {
        f"/{r.path}" + (f"?{r.query}" if r.query else ""): r for r in set(wire.routes.values())
    }
    return msgspec.structs.replace(wire, routes=routes)


_WIRES = {name: _below_base(WIRES[p.wire]) for name, p in PROVIDERS.items()}


def endpoint_of(raw: str) -> tuple[str, Route]:
    """(provider, endpoint) for a request line's target: a known provider prefix, then one
    of its wire's own endpoints exactly (broker_wire.route); Refused (404) otherwise."""
    name, _, rest = raw[1:].partition("/") if raw.startswith("/") else ("", "", "")
    if name not in _WIRES:
        raise Refused(404, "not_found_error", f"skillbench relay: no such endpoint: {raw!r}")
    return name, route(_WIRES[name], f"/{rest}")


class _Exchange:
    """What one forwarded call got: the provider's status and bytes, or why no answer came."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.error: BaseException | None = None
        self.seen = bytearray()


class DriverRelay:
    """start() it on the address workers reach the driver at; env() is what a worker sets."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        models: dict[str, str],
        prices: dict[str, Price] | None = None,
        budget: float | None = None,
    ):
        self.token = secrets.token_urlsafe(32)
        self.models = models  # body's model name -> priced as (broker.allowed_models)
        self.prices = prices
        self.ledger = Ledger(budget)  # the run's --max-cost, across every worker
        self._keys = {n: os.environ.get(p.key_var, "") for n, p in PROVIDERS.items()}
        self._bases = {n: (os.environ.get(p.base_var) or p.default) for n, p in PROVIDERS.items()}
        self._client = httpx.Client(timeout=httpx.Timeout(600.0, connect=30.0))
        self.refused = 0
        self._connections = ConnectionCap(MAX_CONNECTIONS)
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = READ_DEADLINE  # an idle or trickling client cannot hold a thread

            def do_POST(self) -> None:
                relay._connections.busy(self.connection)
                try:
                    relay._handle(self)
                finally:
                    relay._connections.idle(self.connection)  # (keep-alive: may wait again)

            do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_POST

            def log_message(self, format: str, *args: object) -> None:
                pass  # nothing a worker sends is printed

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 64

            def process_request(self, request: Any, client_address: Any) -> None:
                if relay._connections.accept(request):  # before a thread is spent on it
                    super().process_request(request, client_address)
                else:
                    self.shutdown_request(request)

            def process_request_thread(self, request: Any, client_address: Any) -> None:
                try:
                    super().process_request_thread(request, client_address)
                finally:
                    relay._connections.gone(request)

            def handle_error(self, request: Any, client_address: Any) -> None:
                exc = sys.exc_info()[1]  # one line, never the stdlib's traceback
                if not isinstance(exc, OSError):  # (OSError: the client went away)
                    print(f"skillbench relay: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)

        self._server = Server((host, port), Handler)
        self.host = host
        self.port = self._server.server_address[1]

    def bind(self, run: RunLedger) -> None:
        """Reserve and settle every worker's calls in the run's own ledger from now on (the
        one the driver's judge, grader and trigger calls spend in): --max-cost is then one
        ceiling for the run across every node."""
        if self.ledger.run is not run:
            self.ledger = Ledger(None, run)

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
        sent = handler.headers.get("x-api-key") or handler.headers.get("x-goog-api-key") or ""
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
        try:
            name, endpoint = endpoint_of(handler.path)
            if not self._authorised(handler):
                return self._refuse(handler, 401, "unknown token")
            if handler.command != "POST":
                raise Refused(
                    405, "invalid_request_error", f"skillbench relay: no {handler.command}"
                )
            wire = _WIRES[name]
            wire.check_headers(handler.headers.items())
            body = read_body(
                handler.rfile, handler.headers, sock=handler.connection, deadline=READ_DEADLINE
            )
            head = wire.head(body, endpoint.model)  # (the Gemini API's model is the path's)
            body, drop_usage = with_usage(endpoint, head, body)
            priced_as = self.models.get(head.model)
            # the run's model at its own provider only: the driver may hold other providers'
            # keys (its judge's), which the name must not reach (nor be priced as this model)
            if priced_as is None or priced_as.partition("/")[0] != name:
                raise Refused(
                    400,
                    "invalid_request_error",
                    f"model {head.model!r} at {name} is not this run's",
                )
            worst: float | None = 0.0  # count_tokens is free: nothing to hold
            if endpoint.billed:
                most = head.max_output if head.max_output is not None else wire.default_max_output
                if most is None:
                    raise Refused(400, "invalid_request_error", "the request has no max_tokens")
                worst = worst_case_usd(priced_as, len(body) + head.unseen_tokens, most, self.prices)
            ledger = self.ledger  # (reserved and settled in the same one)
            if not ledger.reserve(worst):
                raise Refused(400, "invalid_request_error", "the run's --max-cost cannot cover it")
        except Refused as why:
            return self._refuse(handler, why.status, why.message)
        call = _Exchange()
        try:
            self._forward(handler, name, endpoint, body, call, drop_usage)
        finally:  # settled as the broker settles (broker_billing): the same bill, fees and all
            ran = may_have_run(call.status, call.error)
            text = call.seen.decode(errors="replace")
            ledger.settle(worst, bill(wire, text, priced_as, worst, self.prices, ran=ran).cost)

    def _forward(
        self,
        handler: BaseHTTPRequestHandler,
        name: str,
        endpoint: Route,
        body: bytes,
        call: _Exchange,
        drop_usage: bool,
    ) -> None:
        wire = _WIRES[name]
        headers = wire.outgoing(handler.headers.items(), self._keys[name])
        url = upstream_url(self._bases[name], endpoint)
        try:
            with self._client.stream("POST", url, content=body, headers=headers) as upstream:
                call.status = upstream.status_code
                handler.send_response(upstream.status_code)
                for k, v in upstream.headers.items():
                    if k.lower() not in RESPONSE_DROPPED:
                        handler.send_header(k, v)
                handler.send_header("transfer-encoding", "chunked")
                handler.end_headers()
                passed = UsageChunks() if drop_usage else None
                for chunk in upstream.iter_raw():
                    call.seen += chunk
                    out = passed.feed(chunk) if passed else chunk
                    if out:  # (a zero-length chunk would end the body)
                        handler.wfile.write(b"%x\r\n%s\r\n" % (len(out), out))
                        handler.wfile.flush()
                out = passed.flush() if passed else b""
                if out:
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(out), out))
                handler.wfile.write(b"0\r\n\r\n")
        except httpx.HTTPError as exc:
            call.error = exc
            with contextlib.suppress(OSError):
                self._refuse(
                    handler, 502, f"the provider could not be reached: {type(exc).__name__}"
                )
        except OSError:
            handler.close_connection = True  # the worker went away mid-answer
