"""What differs between providers' APIs for the model broker (docs/trust.md): the request targets
an agent CLI may use, how the key is sent, where usage is, what a stream cut off mid-response
looks like, and the shape of an error.

Only origin-form targets from a fixed list pass: the pinned CLIs call exactly these (Claude Code
2.1.332 `POST /v1/messages?beta=true`, Codex 0.169.0 `POST /v1/responses`, as the broker's
exchange logs show); `count_tokens` and Chat Completions are the same wires' other calls an
agent may make. The upstream URL is the configured base URL joined with our own copy of the
path, so nothing the sandbox sent (an `@host`, an absolute URL, `..`, a percent-encoded
anything) is ever part of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import msgspec

from skillbench.broker_limits import Refused
from skillbench.models.base import Usage, anthropic_usage


class Route(msgspec.Struct, frozen=True):
    """One endpoint the broker forwards to: its path below the base URL and its query."""

    path: str  # relative: joined to the base URL, e.g. "v1/messages" or "responses"
    query: str = ""
    billed: bool = True  # count_tokens is free: nothing to reserve
    # Chat Completions: a stream carries its usage only when the request asks for it
    # (`stream_options.include_usage`), so the broker asks (broker_billing.with_usage)
    usage_if_asked: bool = False


class Wire(msgspec.Struct, frozen=True):
    """A provider's API as the broker speaks it."""

    routes: Mapping[str, Route]  # request target (path and query, exactly) -> endpoint
    auth: Callable[[str], dict[str, str]]
    usage: Callable[[str], Usage]
    cut: Callable[[str], bool]
    error: Callable[[str, str], dict[str, Any]]
    # the output cap a request may leave out (None: the API requires one, so must the broker)
    default_max_output: int | None
    # the request headers passed on (lower case), and prefixes of SDK telemetry headers that
    # change nothing at the provider's; everything else the sandbox sends is dropped (an
    # organization or project of its choosing, X-Forwarded-For, Upgrade, TE, ...)
    headers: frozenset[str] = frozenset()
    header_prefixes: tuple[str, ...] = ()

    def forwards(self, name: str) -> bool:
        low = name.lower()
        return low in self.headers or low.startswith(self.header_prefixes)


def route(wire: Wire, target: str) -> Route:
    """The endpoint a request target names; Refused (404) for anything not on the list."""
    found = wire.routes.get(target)
    if found is None:
        raise Refused(404, "not_found_error", f"skillbench broker: no such endpoint: {target!r}")
    return found


def upstream_url(base: str, endpoint: Route) -> httpx.URL:
    """The configured base URL (its own path kept) joined with the endpoint's path."""
    url = httpx.URL(base.rstrip("/") + "/").join(endpoint.path)
    return url.copy_with(query=endpoint.query.encode()) if endpoint.query else url


def _events(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a response: the `data:` lines of an event stream, or the body."""
    # an event stream's lines end in \r\n, \r or \n only: str.splitlines() also ends one at
    # U+2028 and the like, which JSON keeps raw inside the model's text (the usage is lost)
    lines = re.split(r"\r\n|\r|\n", text)
    payloads = [line[5:].strip() for line in lines if line.startswith("data:")]
    out = []
    for payload in payloads or [text]:
        try:
            event = json.loads(payload)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def _anthropic_usage(text: str) -> Usage:
    """From a Messages body, or the `message_start` / `message_delta` events of a stream
    (later events carry the running totals)."""
    found: dict[str, Any] = {}
    for event in _events(text):
        raw = event.get("usage") or (event.get("message") or {}).get("usage") or {}
        for key, value in raw.items() if isinstance(raw, dict) else ():
            if isinstance(value, int) or key == "cache_creation":  # (the hour's writes)
                found[key] = value
    return anthropic_usage(found)


def _openai_usage(text: str) -> Usage:
    """From a Responses body or its stream's `response.completed` event (or a Chat
    Completions body); OpenAI counts cached tokens inside the input tokens."""
    usage = Usage()
    for event in _events(text):
        raw = (event.get("response") or {}).get("usage") or event.get("usage")
        if not isinstance(raw, dict):
            continue
        details = raw.get("input_tokens_details") or raw.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or 0)
        total_in = int(raw.get("input_tokens") or raw.get("prompt_tokens") or 0)
        usage = Usage(
            input_tokens=max(0, total_in - cached),
            output_tokens=int(raw.get("output_tokens") or raw.get("completion_tokens") or 0),
            cache_read_tokens=cached,
        )
    return usage


def final_usage(text: str) -> bool:
    """Whether a response carries the provider's final count: a `usage` object at the top of
    its body or of an event (Anthropic's `message_delta`, a Chat Completions usage chunk), or
    in a Responses event's `response` (`response.completed` and the other ends). Anthropic's
    `message_start` holds only a first count, inside `message`: a stream cut after it has none."""
    for event in _events(text):
        inner = event.get("response")
        if isinstance(event.get("usage"), dict) or (
            isinstance(inner, dict) and isinstance(inner.get("usage"), dict)
        ):
            return True
    return False


def server_tool_calls(text: str) -> int:
    """How many server-tool calls a response reports (`usage.server_tool_use`, whose later
    events carry the running totals): the broker refuses requests that declare one, but what
    the provider ran anyway is billed."""
    most = 0
    for event in _events(text):
        raw = event.get("usage") or (event.get("message") or {}).get("usage") or {}
        used = raw.get("server_tool_use") if isinstance(raw, dict) else None
        if isinstance(used, dict):
            most = max(most, sum(v for v in used.values() if isinstance(v, int) and v > 0))
    return most


_COMMON = frozenset({"content-type", "accept", "user-agent"})
_MESSAGES = Route("v1/messages")
_COUNT = Route("v1/messages/count_tokens", billed=False)
_BETA = "beta=true"  # Claude Code asks for its beta features this way

WIRES: dict[str, Wire] = {
    "anthropic": Wire(
        routes={
            "/v1/messages": _MESSAGES,
            f"/v1/messages?{_BETA}": Route(_MESSAGES.path, _BETA),
            "/v1/messages/count_tokens": _COUNT,
            f"/v1/messages/count_tokens?{_BETA}": Route(_COUNT.path, _BETA, billed=False),
        },
        auth=lambda key: {"x-api-key": key},
        usage=_anthropic_usage,
        cut=lambda text: "event: message_start" in text and "message_stop" not in text,
        error=lambda kind, msg: {"type": "error", "error": {"type": kind, "message": msg}},
        default_max_output=None,
        headers=_COMMON | {"anthropic-version", "anthropic-beta", "x-app"},
        header_prefixes=("x-stainless-",),
    ),
    # the base URL of an OpenAI-style provider ends in /v1 (OPENAI_BASE_URL's convention);
    # the CLI is pointed at <relay>/v1, so its targets carry the /v1 once
    "openai": Wire(
        routes={
            "/v1/responses": Route("responses"),
            "/v1/chat/completions": Route("chat/completions", usage_if_asked=True),
        },
        auth=lambda key: {"authorization": f"Bearer {key}"},
        usage=_openai_usage,
        cut=lambda text: (
            "response.created" in text
            and not any(
                end in text
                for end in ("response.completed", "response.failed", "response.incomplete")
            )
        ),
        error=lambda kind, msg: {"error": {"type": kind, "message": msg, "code": kind}},
        default_max_output=128_000,  # the largest output of the GPT-5 family
        # (Codex's own: originator, version, session_id, conversation_id, OpenAI-Beta)
        headers=_COMMON | {"openai-beta", "originator", "version", "session_id", "conversation_id"},
        header_prefixes=("x-stainless-",),
    ),
}
