"""What a forwarded model call is billed (docs/trust.md), the same for a session's broker and
the driver's relay: both ask for the usage a response would otherwise leave out, and both
settle a call through bill().

A call is billed from the provider's own final usage in its response, plus the server-tool
fees it reports. A call whose final usage never arrived, although the provider may have run
it (a stream cut by either side, an answer that never came), is billed its whole reservation:
the provider bills what it generated, up to the call's output cap, and counting less would let
a sandbox spend past --max-cost by hanging up before the count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import NamedTuple

import httpx

from skillbench.broker.limits import Head, Refused
from skillbench.broker.wire import Route, Wire, server_tool_calls
from skillbench.models.base import Usage
from skillbench.models.pricing import SERVER_TOOL_CALL_USD, Price, cost_usd

# errors raised before the provider had the whole request: it cannot have run it
_NOT_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.WriteError,
    httpx.WriteTimeout,
    httpx.UnsupportedProtocol,
    httpx.LocalProtocolError,  # our client would not send it (a header value h11 refuses)
    UnicodeEncodeError,  # nor this (a header value that is not ASCII)
)


class Bill(NamedTuple):
    usage: Usage  # as the response reported it (a cut stream's is partial)
    cost: float | None  # None: the model has no known price
    whole: bool  # the provider's final usage was read (else the reservation was billed)


def may_have_run(status: int | None, error: BaseException | None) -> bool:
    """Whether the provider may have generated for the call: it answered 2xx, or it was sent
    the request and no answer came (a timeout, a dropped connection)."""
    if status is not None:
        return 200 <= status < 300
    return error is not None and not isinstance(error, _NOT_SENT)


def bill(
    wire: Wire,
    text: str,
    priced_as: str,
    reserved: float | None,
    prices: Mapping[str, Price] | None,
    *,
    ran: bool,
) -> Bill:
    """What a call cost: its usage at its model's price plus its server-tool fees, or its
    reservation (the most it could cost) when it `ran` and its final usage is missing."""
    usage = wire.usage(text)
    cost = cost_usd(priced_as, usage, prices)
    if cost is not None:
        cost += server_tool_calls(text) * SERVER_TOOL_CALL_USD
    whole = wire.final(text)
    if ran and not whole and cost is not None and reserved is not None:
        cost = max(cost, reserved)
    return Bill(usage, cost, whole)


def with_usage(endpoint: Route, head: Head, body: bytes) -> tuple[bytes, bool]:
    """The body to forward, and whether the stream's usage chunk is ours to drop: a streamed
    Chat Completion that did not ask for its usage is sent asking for it (else no chunk has
    one), and the client, which did not ask, is not shown the extra chunk (UsageChunks)."""
    if not (endpoint.usage_if_asked and head.stream):
        return body, False
    if head.stream_options is not None and head.stream_options.include_usage:
        return body, False
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise Refused(
            400, "invalid_request_error", "skillbench broker: the body is too deeply nested"
        ) from None
    options = data.get("stream_options")
    options = options if isinstance(options, dict) else {}
    data["stream_options"] = {**options, "include_usage": True}
    return json.dumps(data).encode(), True


_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class UsageChunks:
    """Passes a Chat Completions event stream through, event by event, without the usage-only
    chunk (`choices: []` and a `usage`) the broker asked for on a client's behalf: OpenAI sends
    it only to clients that ask, and code that reads `choices[0]` of every chunk fails on it."""

    def __init__(self) -> None:
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._held + chunk
        out, start = [], 0
        for end in _EVENT_END.finditer(data):
            event = data[start : end.end()]
            start = end.end()
            if not _usage_only(event):
                out.append(event)
        self._held = data[start:]
        return b"".join(out)

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return b"" if _usage_only(held) else held


def _usage_only(event: bytes) -> bool:
    for line in event.splitlines():
        if line.startswith(b"data:"):
            try:
                data = json.loads(line[5:])
            except (ValueError, RecursionError):
                return False
            return isinstance(data, dict) and data.get("choices") == [] and "usage" in data
    return False
