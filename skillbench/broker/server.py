"""The model broker (docs/agents.md, docs/trust.md): how an agent CLI inside a sandbox reaches its
model.

The sandbox has no network and holds only a placeholder key, its session's own. The CLI
talks to a loopback port in its sandbox; the executor relays those bytes to this broker on the
host (one broker per session), which forwards each request to the provider's base URL with the
real key, passes the response through as it arrives (server-sent events, unbuffered), counts
tokens and cost from the provider's own usage (so the cost is known whatever the CLI reports),
and writes every exchange, scrubbed, to `exchanges/<case>.<arm>.<rep>.jsonl`.

Everything in the sandbox is untrusted, so a request is forwarded only when it carries that
placeholder (a pod's sidecar shares the relay's loopback, never the CLI's environment), its
target is one of the wire's own endpoints (broker_wire), its body is under the cap and names a
model the run allows, a slot of the session's concurrency cap is free, and the session's budget
can cover the call's worst case (broker_limits). Anything else is answered here with a 4xx, and
nothing the broker does wrong reaches the terminal: a fault is one line in the exchange log and
in the session's error.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

import httpx

from skillbench.broker.billing import UsageChunks, bill, may_have_run, with_usage
from skillbench.broker.limits import BODY_CAP, Head, Ledger, Refused, read_body
from skillbench.broker.retries import Tries, question
from skillbench.broker.wire import RESPONSE_DROPPED, WIRES, Route, route, upstream_url
from skillbench.models import parse_model
from skillbench.models.base import Usage
from skillbench.models.ledger import RunLedger
from skillbench.models.pricing import Price, price_for, worst_case_usd
from skillbench.util.conncap import ConnectionCap
from skillbench.util.scrub import scrub_obj

READ_DEADLINE = 60.0  # seconds a connection may wait on its client before it is closed
MAX_CONNECTIONS = 32  # threads one broker spends on connections (MAX_CONCURRENT calls + queue)
_KEEP_LOG = 1 << 20  # characters of a request or a response kept in the exchange log


class _Cancelled(Exception):
    """The session ended while this call was in flight."""


class _Call:
    """One request being served: what stop() needs to cut it short, and what it saw."""

    def __init__(self, handler: BaseHTTPRequestHandler):
        self.handler = handler
        self.response: httpx.Response | None = None
        self.body = b""
        self.model: str | None = None
        self.seen = bytearray()  # the response, as it passed
        self.drop_usage = False  # the stream's usage chunk was asked for on the CLI's behalf
        self.hung_up = False  # the client went away before the whole response reached it
        self.asked = b""  # what it asks (retries.question): a retry of it asks the same
        self.error: BaseException | None = None  # why no answer came, if none did
        self.usage: Usage | None = None  # counted from `seen` once the call is over
        self.cost: float | None = None
        self.whole = True  # the provider's final usage was seen (else: billed its reservation)
        self.done = False  # its exchange is written (by its thread, or by stop())

    @property
    def text(self) -> str:
        return self.seen.decode(errors="replace")

    def cut(self) -> None:
        """Shut both its sockets: whatever its thread waits on returns at once."""
        sockets = [self.handler.connection]
        stream = self.response.extensions.get("network_stream") if self.response else None
        if stream is not None:
            sockets.append(stream.get_extra_info("socket"))
        for sock in sockets:
            with contextlib.suppress(OSError, AttributeError):
                sock.shutdown(socket.SHUT_RDWR)


class Broker:
    """One session's broker: start() it, point the sandbox's relay at `port`, stop() it."""

    MAX_CONCURRENT = 8  # model calls one session has in flight; more wait for a slot

    def __init__(
        self,
        *,
        upstream: str,
        api_key: str,
        model: str,
        exchanges: Path,
        wire: str = "anthropic",
        secondary: str | None = None,
        prices: Mapping[str, Price] | None = None,
        budget: float | None = None,
        run_ledger: RunLedger | None = None,
        kind: str = "agent",
        max_requests: int | None = None,
        max_failures: int | None = None,
        body_cap: int = BODY_CAP,
        max_concurrent: int = MAX_CONCURRENT,
        client_prefix: str = "sk-placeholder",
        opens_session: Callable[[dict[str, Any]], bool] | None = None,
    ):
        self.upstream = upstream.rstrip("/")
        self.wire = WIRES[wire]
        self.max_requests = max_requests  # the session's model-call cap, where the CLI has none
        # failed tries of one question after which it is no longer forwarded, for a CLI
        # whose own retries cannot be capped (broker/retries.py)
        self.max_failures = max_failures
        self._tries = Tries()
        self.model = model  # the run's model reference
        self.models = allowed_models(model, secondary)  # body's model name -> priced as
        self.prices = prices
        self.body_cap = body_cap
        self.ledger = Ledger(budget, run_ledger, kind)
        self.usage = Usage()
        self.answered = 0  # requests the provider answered (2xx): the session's model turns
        self.failures = 0  # requests the provider could not be reached for, or answered 5xx
        self.exhausted = False  # a request was refused because the budget was spent
        self.capped = False  # a request was refused because max_requests were answered
        self.fault: str | None = None  # the broker's own last failure, as one line
        # the provider's message for the last request it refused (a 4xx other than 429): what
        # a CLI that gives up on it says in its own words, if at all
        self.rejected: str | None = None
        # what the CLI first asked in its session: its first call, or the first that
        # `opens_session` says is the session's own (a side call sent first, OpenCode's title)
        self.first_request: dict[str, Any] | None = None
        self._opens_session = opens_session
        # the calls forwarded, by the model each named (a subagent's, an alias's): the
        # session's record says which models its calls used
        self.model_calls: dict[str, int] = {}
        self._priced = price_for(model, prices) is not None
        self._key = api_key
        self._lock = threading.Lock()
        self._calls: set[_Call] = set()
        self._forwarding = 0  # calls between their reservation and their settling
        self._sent = 0  # calls forwarded, however they ended: what max_requests counts
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._stopping = threading.Event()
        # only the host side of the session's relay knows this: it opens each connection
        # with it, so no other local process or user can spend the session's key
        self.preamble = f"skillbench-broker {secrets.token_hex(32)}\r\n".encode()
        self.intruders = 0  # connections refused for not opening with the preamble
        # The relay's port inside the sandbox is on a loopback a pod's sidecars share: the
        # preamble proves a connection came through the relay, not that the session's CLI
        # made it. The CLI is given this key (in the form its provider's keys take) and
        # every call must carry it as the wire sends a key; the real key never leaves here.
        self.client_key = f"{client_prefix}-{secrets.token_hex(24)}"
        self._client_auth = self.wire.auth(self.client_key)
        self.unkeyed = 0  # calls refused for not carrying client_key
        self._connections = ConnectionCap(MAX_CONNECTIONS)
        exchanges.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[str] | None = exchanges.open("a", encoding="utf-8")
        self._client = httpx.Client(timeout=httpx.Timeout(600.0, connect=30.0))
        broker = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True
            timeout = READ_DEADLINE  # an idle or trickling client cannot hold a thread

            def handle(self) -> None:
                if broker._admit(self):
                    # through the session's relay: closed to make room for a newcomer only
                    # when no connection without the secret is left (another local user's
                    # flood evicts its own first), and busy once its call shows the key (a
                    # pod's sidecar reaches the relay too, and never shows it)
                    broker._connections.admitted(self.connection)
                    super().handle()

            def serve(self) -> None:
                broker._serve(self)

            do_POST = do_GET = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 64  # the relay's own backlog; the default (5) drops bursts

            def process_request(self, request: Any, client_address: Any) -> None:
                if broker._connections.accept(request):  # before a thread is spent on it
                    super().process_request(request, client_address)
                else:
                    self.shutdown_request(request)

            def process_request_thread(self, request: Any, client_address: Any) -> None:
                try:
                    super().process_request_thread(request, client_address)
                finally:
                    broker._connections.gone(request)

            def handle_error(self, request: Any, client_address: Any) -> None:
                exc = sys.exc_info()[1]  # never the stdlib's traceback
                if not isinstance(exc, OSError):  # (OSError: the client went away)
                    broker._note_fault(exc)

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        # (stop() waits up to one poll interval for the server loop: the default is 0.5 s)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def cost(self) -> float | None:
        """What the session's model calls cost so far (None when a price is unknown)."""
        return self.ledger.spent if self._priced else None

    def start(self) -> Broker:
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the session's brokering: calls still in flight are cut and logged as
        cancelled, quietly (the arm is over; nothing is waiting for them)."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            calls = list(self._calls)
        for call in calls:
            self._record(call, 499, call.text, error="cancelled")  # (unless it just ended)
            call.cut()
        self._client.close()
        with self._lock:
            log, self._log = self._log, None
        if log is not None:
            log.close()

    # --- connections --------------------------------------------------------------------------

    def _admit(self, h: BaseHTTPRequestHandler) -> bool:
        """Whether the connection opened with this session's preamble (else it is refused)."""
        try:
            sent = h.rfile.readline(len(self.preamble) + 1)
        except OSError:
            return False
        if hmac.compare_digest(sent, self.preamble):
            return True
        with self._lock:
            self.intruders += 1
        with contextlib.suppress(OSError):
            msg = b"skillbench broker: this port serves only its own session's relay\n"
            h.wfile.write(
                b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(msg), msg)
            )
        return False

    # --- one request ------------------------------------------------------------------------

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        call = _Call(h)
        with self._lock:
            self._calls.add(call)
        try:
            self._forward(call)
        except Refused as why:
            self._reply_error(h, why.status, why.kind, why.message)
            self._record(call, why.status, why.message, error="refused")
        except _Cancelled:
            pass  # stop() wrote its exchange
        except Exception as exc:  # a fault of ours: one line, and the CLI is told
            if self._stopping.is_set():
                return
            line = self._note_fault(exc)
            self._reply_error(h, 502, "api_error", line)
            self._record(call, 502, line, error="fault")
        finally:
            h.close_connection = True  # a refused body may be unread: no keep-alive after it
            with self._lock:
                self._calls.discard(call)

    def _forward(self, call: _Call) -> None:
        h = call.handler
        if h.command != "POST":
            raise Refused(405, "invalid_request_error", f"skillbench broker: no {h.command}")
        self._check_key(h)
        self.wire.check_headers(h.headers.items())
        self._connections.busy(h.connection)  # the session's own: never closed to make room
        endpoint = route(self.wire, h.path)
        call.body = read_body(
            h.rfile, h.headers, self.body_cap, sock=h.connection, deadline=READ_DEADLINE
        )
        head = self.wire.head(call.body, endpoint.model)
        call.body, call.drop_usage = with_usage(endpoint, head, call.body)
        if self.max_failures is not None and endpoint.billed:
            # a free call (count_tokens) asks no question: the agent can have it refused at
            # will (its rate limit), and that must not use up the tries of the CLI's next call
            call.asked = question(call.body)
        priced_as = self.models.get(head.model)
        if priced_as is None:
            raise Refused(
                400,
                "invalid_request_error",
                f"skillbench: model {head.model!r} is not one this run allows "
                f"({', '.join(sorted(self.models))})",
            )
        call.model = head.model
        if self.first_request is None:
            with contextlib.suppress(ValueError, RecursionError):
                asked = json.loads(call.body)
                if isinstance(asked, dict) and (
                    self._opens_session is None or self._opens_session(asked)
                ):
                    self.first_request = asked
        with self._slot():
            reserved = self._reserve(endpoint, head, priced_as, call)
            with self._lock:
                self.model_calls[head.model] = self.model_calls.get(head.model, 0) + 1
            try:
                status, error = self._stream(call, endpoint)
            finally:
                self._settle(call, priced_as, reserved)
        self._record(call, status, call.text or (error or ""), error=error)

    def _check_key(self, h: BaseHTTPRequestHandler) -> None:
        """Refused (before its body is read) unless the call carries the session's client key."""
        for name, want in self._client_auth.items():
            got = h.headers.get(name) or ""
            if not hmac.compare_digest(got.encode(errors="replace"), want.encode()):
                with self._lock:
                    self.unkeyed += 1
                raise Refused(
                    401,
                    "authentication_error",
                    "skillbench broker: this call does not carry its session's key",
                )

    @contextlib.contextmanager
    def _slot(self) -> Iterator[None]:
        """One of the session's concurrent-call slots, waited for (cancelled at stop)."""
        while not self._slots.acquire(timeout=0.2):
            if self._stopping.is_set():
                raise _Cancelled
        try:
            yield
        finally:
            self._slots.release()

    def _reserve(self, endpoint: Route, head: Head, priced_as: str, call: _Call) -> float | None:
        """Hold the call's worst case against the budget; Refused when it cannot be held."""
        with self._lock:
            if self.max_requests is not None and (self._sent >= self.max_requests):
                self.capped = True
                raise Refused(
                    400,
                    "invalid_request_error",
                    f"skillbench: this session's cap of {self.max_requests} model calls is reached",
                )
            tries = self._tries.of(call.asked)
            if self.max_failures is not None and tries >= self.max_failures:
                raise Refused(
                    400,
                    "invalid_request_error",
                    f"skillbench: the model failed {tries} tries of this call in a row "
                    "(the CLI's retries are spent); it is not forwarded again",
                )
            self._forwarding += 1
            self._sent += 1  # a hang-up after forwarding must not take it out of the cap
        worst: float | None = 0.0
        if endpoint.billed:
            most = head.max_output if head.max_output is not None else self.wire.default_max_output
            if most is None:
                self._unforward()
                raise Refused(
                    400, "invalid_request_error", "skillbench broker: the request has no max_tokens"
                )
            # a token of text is at least one byte of the body: its size bounds the input,
            # with what its media and the provider's tool prompt add (Head.unseen_tokens)
            size = len(call.body) + head.unseen_tokens
            worst = worst_case_usd(priced_as, size, most, self.prices)
        if not self.ledger.reserve(worst):
            self._unforward()
            if worst is None:
                raise Refused(
                    400,
                    "invalid_request_error",
                    f"skillbench: no price is known for {priced_as}, so --max-cost cannot "
                    f'count this call; add [prices."{priced_as}"] to skillbench.toml',
                )
            self.exhausted = True
            raise Refused(
                400,
                "invalid_request_error",
                "skillbench: the run's --max-cost cannot cover this call "
                f"(it could cost up to ${worst:.2f})",
            )
        return worst

    def _unforward(self) -> None:
        """The call was refused before it was forwarded: it holds nothing, counts nothing."""
        with self._lock:
            self._forwarding -= 1
            self._sent -= 1

    def _stream(self, call: _Call, endpoint: Route) -> tuple[int, str | None]:
        """Forward the call and pass its response through as it arrives: its status, and
        why it failed (None: the provider answered)."""
        h = call.handler
        headers = self.wire.outgoing(h.headers.items(), self._key)
        url = upstream_url(self.upstream, endpoint)
        try:
            with self._client.stream("POST", url, content=call.body, headers=headers) as resp:
                call.response = resp
                if self._stopping.is_set():
                    raise _Cancelled
                # The CLI went away: reading stops here (the provider stops generating when
                # it is hung up on), and a call cut before its final usage is billed its
                # reservation (broker_billing). Reading on to the end would learn the exact
                # count only by having the provider generate, up to the output cap, tokens
                # nobody reads, and it would still need a bound and the reservation past it.
                try:
                    self._pass_on(call, resp)
                except OSError:
                    call.hung_up = True
        except (httpx.HTTPError, UnicodeEncodeError) as exc:
            call.error = exc
            if self._stopping.is_set():
                raise _Cancelled from None
            local = isinstance(exc, httpx.LocalProtocolError | UnicodeEncodeError)
            if not local:  # our client refusing to send a request is no failure of the provider
                with self._lock:
                    self.failures += 1
                    self._ended(call, failed=True)
            why = f"skillbench broker: provider unreachable: {type(exc).__name__}"
            if call.response is None:  # nothing was sent to the CLI yet: it can be told
                self._reply_error(h, 502, "api_error", why)
            return 502, why
        if self._stopping.is_set():
            raise _Cancelled
        with self._lock:
            cut = self.wire.cut(call.text) and not call.hung_up
            if resp.status_code >= 500 or resp.status_code == 429 or cut:
                self.failures += 1
                self._ended(call, failed=True)
            elif call.hung_up:
                # the CLI (or the agent, which holds the key) hung up on the answer: no
                # failure of the provider's, so no try of the question used up, and no answer
                pass
            elif 200 <= resp.status_code < 300:
                self.answered += 1
                self._ended(call, failed=False)
            elif resp.status_code >= 400:
                self.rejected = _error_message(call.seen) or f"HTTP {resp.status_code}"
        return resp.status_code, None

    @staticmethod
    def _pass_on(call: _Call, resp: httpx.Response) -> None:
        """The provider's response, passed to the CLI as it arrives."""
        h = call.handler
        h.send_response(resp.status_code)
        for key, value in resp.headers.items():
            if key.lower() not in RESPONSE_DROPPED:
                h.send_header(key, value)
        h.send_header("Connection", "close")  # the end of the body is the end of it
        h.end_headers()
        passed = UsageChunks() if call.drop_usage else None
        for chunk in resp.iter_raw():
            call.seen += chunk
            h.wfile.write(passed.feed(chunk) if passed else chunk)
            h.wfile.flush()
        if passed:
            h.wfile.write(passed.flush())

    def _ended(self, call: _Call, failed: bool) -> None:
        """The call's try ended (under the lock)."""
        if call.asked:
            self._tries.ended(call.asked, failed)

    def _settle(self, call: _Call, priced_as: str, reserved: float | None) -> None:
        """Count what the call used, at its own model's price, and free its reservation."""
        status = call.response.status_code if call.response is not None else None
        ran = may_have_run(status, call.error)
        call.usage, call.cost, call.whole = bill(
            self.wire, call.text, priced_as, reserved, self.prices, ran=ran
        )
        self.ledger.settle(reserved, call.cost)
        with self._lock:
            self._forwarding -= 1
            self.usage = self.usage + call.usage
            if call.cost is None:
                self._priced = False

    # --- answers and records ----------------------------------------------------------------

    def _reply_error(self, h: BaseHTTPRequestHandler, status: int, kind: str, msg: str) -> None:
        data = json.dumps(self.wire.error(kind, msg)).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.send_header("Connection", "close")
            h.end_headers()
            h.wfile.write(data)
        except OSError:
            pass

    def _note_fault(self, exc: BaseException | None) -> str:
        """The broker's own failure as one line (the session reports it)."""
        line = f"skillbench broker: {type(exc).__name__}: {str(exc)[:200]}"
        self.fault = line
        return line

    def _record(self, call: _Call, status: int, response: str, error: str | None = None) -> None:
        with self._lock:
            if self._log is None or call.done:
                return
            call.done = True  # one exchange a call: its own, or stop()'s
        line = {
            "at": time.time(),
            "path": call.handler.path,
            "status": status,
            "model": call.model,
            "request": _readable(call.body),
            "response": response[-_KEEP_LOG:],
            "usage": None if call.usage is None else _plain(call.usage),
            "cost_usd": call.cost,
            **({} if call.whole else {"billed": "its reservation: no final usage arrived"}),
            **({"error": error} if error else {}),
        }
        try:
            text = json.dumps(scrub_obj(line), ensure_ascii=False) + "\n"
        except RecursionError:  # a body nested deeper than the scrubber goes: kept as text
            line["request"] = call.body[:_KEEP_LOG].decode(errors="replace")
            text = json.dumps(scrub_obj(line), ensure_ascii=False) + "\n"
        with self._lock:
            if self._log is not None:
                self._log.write(text)
                self._log.flush()


def allowed_models(model: str, secondary: str | None = None) -> dict[str, str]:
    """The model names a request body may carry, each with the reference it is priced as:
    the run's model, and the CLI's secondary model when one is configured. A scripted run
    prices everything as its script (nothing real is spent)."""
    run = parse_model(model)
    names = {run.name: model}
    if secondary:
        names[parse_model(secondary).name] = model if run.scripted else secondary
    return names


def _readable(body: bytes) -> Any:
    """A request body for the exchange log: its JSON, or its text, within the log's cap."""
    if len(body) > _KEEP_LOG:
        return f"({len(body)} bytes, not kept)"
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return body.decode(errors="replace")


def _plain(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cache_write_1h_tokens": usage.cache_write_1h_tokens,
    }


def _error_message(body: bytes | bytearray) -> str | None:
    """The `error.message` of a provider's error body (Anthropic's and OpenAI's shape), as one
    short line; None when the body is not one."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return " ".join(message.split())[:400] if isinstance(message, str) and message else None
