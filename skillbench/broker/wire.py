"""What differs between providers' APIs for the model broker (docs/trust.md): the request targets
an agent CLI may use, how the key is sent, where usage is, what a stream cut off mid-response
looks like, and the shape of an error.

Only origin-form targets from a fixed list pass: the pinned CLIs call exactly these (Claude Code
2.1.332 `POST /v1/messages?beta=true`, Codex 0.169.0 `POST /v1/responses`, Gemini CLI 0.61.0
`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, Copilot CLI 1.0.102
`POST /v1/chat/completions`, as the broker's exchange logs show); `count_tokens`, Chat
Completions and Gemini's `:generateContent` and `:countTokens` are the same wires' other calls
an agent may make (the `openai-chat` wire, Copilot's, has Chat Completions alone). The Gemini
API names the model in the path: a target passes only as `/v1beta/models/<name>:<verb>` with
a plain name (letters, digits, `.`, `_`, `-`) and one verb of the list, and that name is
checked against the run's models like a body's `model`. The upstream URL is the configured
base URL joined with our own copy of the path, so nothing the sandbox sent (an `@host`, an
absolute URL, `..`, a percent-encoded anything, a `?key=`) is ever part of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx
import msgspec

from skillbench.broker.limits import Head, Refused, read_gemini_head, read_head
from skillbench.models.base import Usage, anthropic_usage


class Route(msgspec.Struct, frozen=True):
    """One endpoint the broker forwards to: its path below the base URL and its query."""

    path: str  # relative: joined to the base URL, e.g. "v1/messages" or "responses"
    query: str = ""
    billed: bool = True  # count_tokens is free: nothing to reserve
    model: str | None = None  # the model the target names (the Gemini API's), checked later
    # Chat Completions: a stream carries its usage only when the request asks for it
    # (`stream_options.include_usage`), so the broker asks (broker_billing.with_usage)
    usage_if_asked: bool = False


class Wire(msgspec.Struct, frozen=True):
    """A provider's API as the broker speaks it."""

    routes: Mapping[str, Route]  # request target (path and query, exactly) -> endpoint
    auth: Callable[[str], dict[str, str]]
    usage: Callable[[str], Usage]
    cut: Callable[[str], bool]
    final: Callable[[str], bool]  # whether the response carries the provider's final usage
    error: Callable[[str, str], dict[str, Any]]
    # the output cap a request may leave out (None: the API requires one, so must the broker)
    default_max_output: int | None
    # the request headers passed on (lower case), and prefixes of SDK telemetry headers that
    # change nothing at the provider's; everything else the sandbox sends is dropped (an
    # organization or project of its choosing, X-Forwarded-For, Upgrade, TE, ...)
    headers: frozenset[str] = frozenset()
    header_prefixes: tuple[str, ...] = ()
    # the endpoints below /v1beta/models/<name> (the Gemini API's): verb and query -> path
    # template; empty for a wire whose model is in the body
    model_routes: Mapping[str, Route] = {}
    # how the broker reads a body (the model in it, or in the path: `Route.model`)
    head: Callable[[bytes, str | None], Head] = lambda body, _: read_head(body)

    def forwards(self, name: str) -> bool:
        low = name.lower()
        return low in self.headers or low.startswith(self.header_prefixes)

    def check_headers(self, headers: Iterable[tuple[str, str]]) -> None:
        """Refused (400) for a header this wire forwards that HTTP does not allow in the ASCII
        our client sends (NUL, an obs-fold, `é`, a name with `(`): the client would refuse to
        send it, so it is refused before anything is held for the call. So is one given twice
        (in any case): both would be sent, and which one a provider reads is its choice."""
        seen: set[str] = set()
        for name, value in headers:
            if not self.forwards(name):
                continue
            if not (_FIELD_NAME.fullmatch(name) and _FIELD_VALUE.fullmatch(value)):
                raise Refused(
                    400,
                    "invalid_request_error",
                    f"skillbench: header {name[:40]!r} has a character HTTP does not allow",
                )
            if name.lower() in seen:
                raise Refused(
                    400, "invalid_request_error", f"skillbench: header {name[:40]!r} given twice"
                )
            seen.add(name.lower())

    def outgoing(self, headers: Iterable[tuple[str, str]], key: str) -> dict[str, str]:
        """The headers a checked request goes upstream with: those this wire forwards, its
        key, the usage readable as it passes, and the body said to be the JSON it was read
        as (a provider that read another content type would run what was never checked)."""
        sent = {k.lower(): v for k, v in headers if self.forwards(k)}
        sent.update(self.auth(key))
        sent["content-type"] = "application/json"
        sent["accept-encoding"] = "identity"
        return sent


# Response headers never passed back: one hop's, the key's, and the key owner's organisation
# and project (for no CLI's use); the usage is read unencoded (accept-encoding: identity).
RESPONSE_DROPPED = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "transfer-encoding",
        "keep-alive",
        "x-api-key",
        "x-goog-api-key",
        "authorization",
        "accept-encoding",
        "content-encoding",
        "proxy-authorization",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
    }
)


# RFC 9110 field-name (a token) and field-value (visible ASCII, spaces and tabs between)
_FIELD_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_FIELD_VALUE = re.compile(r"(?:[\x21-\x7e](?:[ \t]*[\x21-\x7e])*)?")


# `/v1beta/models/<name>:<verb>[?alt=sse]`: a plain name, one verb, no other query
_MODEL_TARGET = re.compile(
    r"/v1beta/models/([A-Za-z0-9][A-Za-z0-9._-]{0,127})(:[A-Za-z]+(?:\?.*)?)"
)


def route(wire: Wire, target: str) -> Route:
    """The endpoint a request target names; Refused (404) for anything not on the list."""
    found = wire.routes.get(target)
    named = _MODEL_TARGET.fullmatch(target) if wire.model_routes else None
    if found is None and named is not None:
        model, verb = named.groups()
        template = wire.model_routes.get(verb)
        if template is not None:
            found = msgspec.structs.replace(
                template, path=template.path.format(model=model), model=model
            )
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


def _gemini_usage(text: str) -> Usage:
    """From a `generateContent` body or the chunks of its stream, whose `usageMetadata` carry
    running totals (the most of each count is the call's): the prompt count includes the
    cached tokens, and thinking tokens are billed as output beside the candidates'."""
    most: dict[str, int] = {}
    for event in _events(text):
        raw = event.get("usageMetadata")
        if not isinstance(raw, dict):
            continue
        for key, value in raw.items():
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                most[key] = max(most.get(key, 0), value)
    cached = most.get("cachedContentTokenCount", 0)
    prompt = most.get("promptTokenCount", 0) + most.get("toolUsePromptTokenCount", 0)
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=most.get("candidatesTokenCount", 0) + most.get("thoughtsTokenCount", 0),
        cache_read_tokens=cached,
    )


def _gemini_ends(event: dict[str, Any]) -> bool:
    """Whether a `generateContent` body or chunk ends the answer: a candidate's `finishReason`
    or a block of the prompt."""
    feedback = event.get("promptFeedback")
    if isinstance(feedback, dict) and feedback.get("blockReason"):
        return True
    candidates = event.get("candidates")
    return any(
        isinstance(candidate, dict) and candidate.get("finishReason")
        for candidate in (candidates if isinstance(candidates, list) else ())
    )


def _gemini_cut(text: str) -> bool:
    """A stream (`data:` chunks) that ended before a candidate's `finishReason` or a block of
    the prompt: the provider stopped mid-answer. A plain body is whole or does not parse."""
    if not text.lstrip().startswith("data:"):
        return False
    return not any(_gemini_ends(event) for event in _events(text))


def _gemini_final(text: str) -> bool:
    """Whether a Gemini response carries the provider's final count: a `usageMetadata` in the
    body or chunk that ends the answer, or in one after it. Every chunk of a stream carries a
    running count, so one cut before the end has a count, but not the final one."""
    ended = False
    for event in _events(text):
        ended = ended or _gemini_ends(event)
        if ended and isinstance(event.get("usageMetadata"), dict):
            return True
    return False


# the google.rpc status the Gemini API names each of our refusals with
_GEMINI_STATUS = {
    "invalid_request_error": (400, "INVALID_ARGUMENT"),
    "not_found_error": (404, "NOT_FOUND"),
    "request_too_large": (413, "INVALID_ARGUMENT"),
    "api_error": (502, "UNAVAILABLE"),
}


def _gemini_error(kind: str, message: str) -> dict[str, Any]:
    code, status = _GEMINI_STATUS.get(kind, (400, "INVALID_ARGUMENT"))
    return {"error": {"code": code, "message": message, "status": status}}


def final_usage(text: str) -> bool:
    """Whether a response carries the provider's final count: a `usage` object at the top of
    its body or of an event (Anthropic's `message_delta`, a Chat Completions usage chunk), or
    in a Responses event's `response` (`response.completed` and the other ends). Anthropic's
    `message_start` holds only a first count, inside `message`: a stream cut after it has none."""
    for event in _events(text):
        if event.get("object") == "chat.completion.chunk" and event.get("choices"):
            continue  # a running count (continuous_usage_stats): the final chunk has no choices
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
        final=final_usage,
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
        final=final_usage,
        error=lambda kind, msg: {"error": {"type": kind, "message": msg, "code": kind}},
        default_max_output=128_000,  # the largest output of the GPT-5 family
        # (Codex's own: originator, version, session_id, conversation_id, OpenAI-Beta)
        headers=_COMMON | {"openai-beta", "originator", "version", "session_id", "conversation_id"},
        header_prefixes=("x-stainless-",),
    ),
    # the Gemini API (Gemini CLI, the google-genai SDK): the base URL is the API's root
    # (GOOGLE_GEMINI_BASE_URL's convention), the key goes in a header only
    "gemini": Wire(
        routes={},
        model_routes={
            ":generateContent": Route("v1beta/models/{model}:generateContent"),
            ":streamGenerateContent?alt=sse": Route(
                "v1beta/models/{model}:streamGenerateContent", "alt=sse"
            ),
            ":countTokens": Route("v1beta/models/{model}:countTokens", billed=False),
        },
        head=read_gemini_head,
        auth=lambda key: {"x-goog-api-key": key},
        usage=_gemini_usage,
        cut=_gemini_cut,
        final=_gemini_final,
        error=_gemini_error,
        default_max_output=65_536,  # the largest output of Gemini 2.5 and 3 Pro
        headers=_COMMON | {"x-goog-api-client"},
    ),
}


def _chat_cut(text: str) -> bool:
    """A streamed Chat Completion that stopped before its closing `data: [DONE]` line (the
    last line of the stream: the same words inside a chunk's text are not its end)."""
    lines = [line.strip() for line in text.strip().splitlines()]
    return any(line.startswith("data:") for line in lines) and lines[-1] != "data: [DONE]"


# Chat Completions alone: Copilot CLI 1.0.102 (BYOK, COPILOT_PROVIDER_TYPE=openai) calls
# only `POST /v1/chat/completions` (streamed, asking for its usage itself), as the broker's
# exchange logs and the fake server's show; the Responses API is not on its list
WIRES["openai-chat"] = msgspec.structs.replace(
    WIRES["openai"],
    routes={"/v1/chat/completions": WIRES["openai"].routes["/v1/chat/completions"]},
    cut=_chat_cut,
)
