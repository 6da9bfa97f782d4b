"""The model broker's limits on one request (docs/trust.md): a body cap enforced while reading
(Content-Length or chunked), the few fields of the body the broker reads, and the session's
budget as a ledger of what is spent plus what calls in flight may still spend.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from email.message import Message
from io import BufferedIOBase
from typing import Any

import msgspec

from skillbench.models.ledger import RunLedger
from skillbench.models.pricing import TOOL_PROMPT_TOKENS
from skillbench.util.jsonreply import KeyTwice, once

BODY_CAP = 32 << 20  # bytes: far above any real prompt (a 200k-token context is ~1 MB)
_LENGTH = re.compile(rb"[0-9]{1,12}")
_CHUNK = re.compile(rb"([0-9A-Fa-f]{1,8})(;[^\r\n]*)?\r?\n")


class Refused(Exception):
    """A request the broker answers itself, never forwarding it: status, error kind, why."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def _bad(message: str) -> Refused:
    return Refused(400, "invalid_request_error", f"skillbench broker: {message}")


def read_body(
    rfile: BufferedIOBase,
    headers: Message,
    cap: int = BODY_CAP,
    *,
    sock: socket.socket | None = None,
    deadline: float | None = None,
) -> bytes:
    """The request body, refused (413) as soon as it is known to pass `cap`: from the
    Content-Length before reading any of it, or while reading a chunked body. With `sock`
    and `deadline`, the whole body must arrive within `deadline` seconds (408): a socket
    timeout bounds each read, and a client trickling a byte at a time never trips it."""
    if sock is None or deadline is None:
        return _read_body(rfile, headers, cap)
    late = threading.Event()

    def cut() -> None:
        late.set()
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RD)  # the read under way returns at once

    timer = threading.Timer(deadline, cut)
    timer.daemon = True
    timer.start()
    try:
        return _read_body(rfile, headers, cap)
    except (Refused, OSError):
        if late.is_set():
            raise Refused(
                408,
                "invalid_request_error",
                f"skillbench broker: the body did not arrive within {deadline:g} s",
            ) from None
        raise
    finally:
        timer.cancel()


def _read_body(rfile: BufferedIOBase, headers: Message, cap: int) -> bytes:
    lengths = headers.get_all("Content-Length") or []
    codings = headers.get_all("Transfer-Encoding") or []
    if codings:
        if lengths:  # two framings: the classic request-smuggling ambiguity
            raise _bad("a request with both Content-Length and Transfer-Encoding")
        if [c.strip().lower() for c in ",".join(codings).split(",")] != ["chunked"]:
            raise _bad(f"unsupported Transfer-Encoding {', '.join(codings)!r}")
        return _chunked(rfile, cap)
    if not lengths:
        raise Refused(411, "invalid_request_error", "skillbench broker: a body needs a length")
    if len(set(lengths)) != 1 or not _LENGTH.fullmatch(lengths[0].strip().encode()):
        raise _bad(f"a malformed Content-Length {', '.join(lengths)!r}")
    size = int(lengths[0])
    if size > cap:
        raise _too_big(cap)
    body = rfile.read(size)
    if len(body) != size:
        raise _bad("the body ended before its Content-Length")
    return body


def _too_big(cap: int) -> Refused:
    return Refused(
        413, "request_too_large", f"skillbench broker: the body is over the {cap >> 20} MiB cap"
    )


def _chunked(rfile: BufferedIOBase, cap: int) -> bytes:
    parts, total = [], 0
    while True:
        line = rfile.readline(1024)
        match = _CHUNK.fullmatch(line)
        if match is None:
            raise _bad("a malformed chunk size")
        size = int(match.group(1), 16)
        if size == 0:
            break
        total += size
        if total > cap:
            raise _too_big(cap)
        data = rfile.read(size)
        if len(data) != size or rfile.readline(3) not in (b"\r\n", b"\n"):
            raise _bad("a chunk ended early")
        parts.append(data)
    for _ in range(64):  # trailers, up to the blank line
        if rfile.readline(8192) in (b"\r\n", b"\n", b""):
            return b"".join(parts)
    raise _bad("too many trailer lines")


class _Environment(msgspec.Struct, frozen=True):
    type: str | None = None


class _Tool(msgspec.Struct, frozen=True):
    type: str | None = None  # a client tool (the CLI runs it) may have none
    # OpenAI Responses' `shell`: run by the CLI (`local`, the default) or in a container the
    # provider provisions (`container_auto`, `container_reference`)
    environment: _Environment | None = None

    @property
    def hosted(self) -> bool:
        if not self.type:
            return False
        if self.type == "shell":
            return self.environment is not None and self.environment.type not in (None, "local")
        return _SERVER_TOOLS.match(self.type) is not None


class _StreamOptions(msgspec.Struct, frozen=True):
    include_usage: bool | None = None  # Chat Completions: a stream reports usage only if asked


# Tools the provider runs itself (Anthropic's versioned `web_search_*`, `web_fetch_*`,
# `code_execution_*`, `tool_search_tool_*`, its MCP connector and advisor; OpenAI Responses'
# hosted tools, `tool_search` among them, and a `shell` in a hosted container): web access
# from a sandbox that has none, and fees the token count does not show
_SERVER_TOOLS = re.compile(
    r"(web_search|web_fetch|code_execution|code_interpreter|file_search|computer_use"
    r"|image_generation|mcp|advisor|tool_search)",
    re.IGNORECASE,
)


# OpenAI's `auto` and `default`, its cheaper `flex`; Anthropic's `auto` and `standard_only`
_STANDARD_TIERS = (None, "auto", "default", "flex", "standard_only")


class Head(msgspec.Struct, frozen=True):
    """What the broker reads of a request body: the model, and the output cap under each
    wire's name for it (Messages, Responses, Chat Completions)."""

    model: str
    max_tokens: int | None = None
    max_output_tokens: int | None = None
    max_completion_tokens: int | None = None
    n: int | None = None  # Chat Completions' number of choices: each is billed
    tools: list[_Tool] | None = None
    mcp_servers: list[object] | None = None  # Anthropic's MCP connector
    web_search_options: object | None = None  # Chat Completions' search models
    stream: bool | None = None
    stream_options: _StreamOptions | None = None
    # Responses' background mode answers at once ("queued", no usage) and generates on at the
    # provider's, to be fetched later: billed to the key, never seen by the broker
    background: bool | None = None
    # a premium tier bills the same tokens at a multiple of the standard price, and the usage
    # the provider returns counts tokens, not the tier (OpenAI's `service_tier`, Anthropic's
    # `speed`): only the tiers billed at the standard price or less pass
    service_tier: str | None = None
    speed: str | None = None
    # Anthropic's `inference_geo`: "us" (US-only inference) bills every token of Claude 4.6
    # and later at 1.1x, and the usage counts tokens, not the geography
    inference_geo: str | None = None
    # Anthropic's server-side compaction (a `compact_*` context edit, or the `compaction`
    # parameter): a second sampling pass over the conversation, billed, and reported only in
    # `usage.iterations`, which the top-level usage the broker bills leaves out
    context_management: object | None = None
    compaction: object | None = None
    # Chat Completions' predicted output: the rejected prediction tokens are billed as
    # output, which the body's bytes reserve only at the input rate; no CLI sends it
    prediction: object | None = None
    # Responses' stored context of the key's owner (a response, a conversation, a stored
    # prompt): read from another session's or run's, and input the body does not bound
    previous_response_id: object | None = None
    conversation: object | None = None
    prompt: object | None = None
    # where content blocks are (Messages, Chat Completions; Messages' system; Responses)
    messages: Any = None
    system: Any = None
    input: Any = None
    # input tokens the body's bytes do not bound (its images, documents, audio, the system
    # prompt a provider adds for tools): set by the readers, whatever a body says under this name
    unseen_tokens: int = 0

    @property
    def max_output(self) -> int | None:
        # the largest of the names given: a provider may honour any one of them
        given = [
            v
            for v in (self.max_tokens, self.max_output_tokens, self.max_completion_tokens)
            if v is not None
        ]
        return max(given) if given else None


def _one_value_a_key(body: bytes) -> None:
    """Refused (400) for a body with a key given twice in one object, at any depth: the
    broker reads the last one, and a provider's parser may read the first or merge both
    (protobuf's JSON mapping appends a repeated field given twice), so what was checked and
    reserved would not be what runs (`"tools": [web_search], "tools": []`, `"n": 128, "n": 1`)."""

    try:
        json.loads(body, object_pairs_hook=once)
    except KeyTwice as twice:
        raise _bad(f"the key {twice.key[:40]!r} is given twice in one object") from None
    except (ValueError, RecursionError):
        # a body this parser cannot read (a 5,000-digit number, a byte that is not UTF-8)
        # may still pass the typed decode, which keeps the last of a key given twice: what
        # cannot be checked here is refused, not forwarded
        raise _bad("the body is not JSON every parser reads the same way") from None


def read_head(body: bytes) -> Head:
    """The body's head; Refused (400) for a body that is not a JSON object naming a model
    (however it is malformed: too deep is one of the ways)."""
    _one_value_a_key(body)
    try:
        head = msgspec.json.decode(body, type=Head)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise _bad(f"the body is not a model request: {str(exc)[:200]}") from None
    if head.max_output is not None and head.max_output < 0:
        raise _bad("a negative output cap")
    if head.n is not None and head.n != 1:
        # each choice is billed, and the reservation covers one: no CLI asks for more
        raise _bad(f"n={head.n}: the broker forwards one choice a call")
    hosted = [t.type for t in head.tools or () if t.hosted]
    if head.mcp_servers:
        hosted.append("mcp_servers")
    if head.web_search_options is not None:
        hosted.append("web_search_options")
    if hosted:
        raise _bad(
            f"server tool {hosted[0]!r}: the provider would run it (web access, and fees) "
            "for a sandbox that has no network; sessions use their own tools"
        )
    fetched = _fetched((head.messages, head.system, head.input))
    if fetched:
        raise _bad(
            f"{fetched}: the provider would fetch it itself, for a sandbox that has no network; "
            "send the content in the request (base64, or a data: URL)"
        )
    stored = [
        name
        for name, value in (
            ("previous_response_id", head.previous_response_id),
            ("conversation", head.conversation),
            ("prompt", head.prompt if isinstance(head.prompt, dict) else None),
        )
        if value is not None
    ]
    if stored:
        raise _bad(
            f"{stored[0]}: a sandbox may not read the key owner's stored context, and its "
            "tokens are not in the body the broker bounds the call by; send the whole input"
        )
    if head.prediction is not None:
        raise _bad(
            "prediction: its rejected tokens are billed as output, above what the broker "
            "reserves for them; send the request without a predicted output"
        )
    if head.service_tier not in _STANDARD_TIERS:
        raise _bad(
            f"service_tier={head.service_tier!r}: it is billed above the price the broker "
            "reserves and counts; use the default tier"
        )
    if head.speed not in (None, "standard"):
        raise _bad(
            f"speed={head.speed!r}: it is billed above the price the broker reserves and "
            "counts; use the standard speed"
        )
    if head.compaction is not None or _compacts(head.context_management):
        raise _bad(
            "server-side compaction: its summarizing pass is billed outside the usage the "
            "broker counts; let the CLI compact its own context"
        )
    if head.inference_geo not in (None, "global"):
        raise _bad(
            f"inference_geo={head.inference_geo!r}: it is billed above the price the broker "
            "reserves and counts; leave it to the default (global)"
        )
    if head.background:
        raise _bad(
            "background=true: the provider would generate after the call is answered, where "
            "the broker cannot count it; ask in the foreground (stream if it is long)"
        )
    return msgspec.structs.replace(
        head,
        unseen_tokens=_media((head.messages, head.system, head.input)) + _tool_tokens(head.tools),
    )


# A tool the provider defines (Anthropic's `bash_*`, `text_editor_*`, `computer_*`, `memory_*`;
# OpenAI's `local_shell`, `apply_patch`): the CLI runs it, but the provider expands its name
# into a definition of its own, billed as input (Anthropic: bash 245 tokens, the text editor
# 700, computer use 735 and a system prompt of up to 499 more). A tool the request defines
# itself (no type, `custom`, `function`) is its bytes.
DEFINED_TOOL_TOKENS = 2_000
_OWN_TOOLS = (None, "", "custom", "function")


def _tool_tokens(tools: list[_Tool] | None) -> int:
    """The input tokens a request's tools add beyond their bytes: the tool prompt, and each
    provider-defined tool's definition."""
    if not tools:
        return 0
    return TOOL_PROMPT_TOKENS + DEFINED_TOOL_TOKENS * sum(t.type not in _OWN_TOOLS for t in tools)


# A base64 image is billed by its pixels, not its bytes: a large flat image compresses to a
# few hundred bytes and is billed up to ~1,600 tokens (Anthropic, 1.15 MP), ~4,800 (its
# high-resolution models), ~10,000 patches (OpenAI's `original` detail) times a model's
# multiplier. A PDF (each page as text and an image), audio and video are bounded by nothing
# but the context window. The reservation counts these; the settled cost is the provider's.
IMAGE_TOKENS = 50_000  # gpt-4o-mini bills a 768x2048 high-detail image 48,169 tokens
MEDIA_TOKENS = 2_000_000  # the largest context window a provider serves: no input is more


def _media(roots: tuple[Any, ...]) -> int:
    """The input tokens of the content blocks in `roots` that their bytes do not bound:
    IMAGE_TOKENS an image (Anthropic `image`, Chat Completions `image_url`, Responses
    `input_image`), MEDIA_TOKENS a document that is not plain text, a file or audio; at most
    MEDIA_TOKENS in all. A tool call's own input (the model's JSON) is not content."""
    total, stack = 0, list(roots)
    while stack and total < MEDIA_TOKENS:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if kind in ("image", "image_url", "input_image"):
            total += IMAGE_TOKENS
        elif kind in ("document", "file", "input_file", "input_audio", "audio", "video"):
            source = node.get("source")
            text = isinstance(source, dict) and source.get("type") in ("text", "content")
            total += 0 if text else MEDIA_TOKENS
        tool_call = isinstance(kind, str) and kind.endswith("tool_use")
        stack.extend(v for k, v in node.items() if not (tool_call and k == "input"))
    return min(total, MEDIA_TOKENS)


def _gemini_inline(roots: tuple[Any, ...]) -> list[Any]:
    """Every `inlineData` part's value in `roots` (either of the API's spellings)."""
    found, stack = [], list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key in ("inlineData", "inline_data"):
                if node.get(key) is not None:
                    found.append(node[key])
            stack.extend(node.values())
    return found


def _gemini_heard(inline: list[Any]) -> str | None:
    """The MIME type of the first inline part that is audio or video."""
    for data in inline:
        if isinstance(data, dict):
            mime = str(data.get("mimeType") or data.get("mime_type") or "").lower()
            if mime.startswith(("audio/", "video/")):
                return mime[:100]
    return None


def _compacts(management: object) -> bool:
    """Whether a `context_management` asks the provider to compact (Anthropic's edits list,
    or a list of entries): an entry whose type names compaction."""
    entries = management.get("edits") if isinstance(management, dict) else management
    return any(
        isinstance(e, dict) and "compact" in str(e.get("type") or "").lower()
        for e in (entries if isinstance(entries, list) else ())
    )


def _fetched(roots: tuple[Any, ...]) -> str | None:
    """The first content block the provider would fetch from elsewhere, named: an Anthropic
    image or document `source` of type url or file (Files API), an OpenAI `image_url` that is
    not a data: URL (Chat Completions' `image_url.url`, Responses' `input_image.image_url`), a
    `file_url` or a `file_id` (Responses' `input_file`, Chat Completions' `file.file_id`).
    A tool call's own input (the model's JSON, replayed) is not content and is not read."""
    stack = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        source = node.get("source")
        if isinstance(source, dict) and source.get("type") in ("url", "file"):
            return f"a {node.get('type')} from a {source['type']} source"
        image = node.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if isinstance(url, str) and not url.lower().startswith("data:"):
            return "an image_url that is not a data: URL"
        for key in ("file_url", "file_id"):
            if node.get(key):
                return f"a {node.get('type') or 'content block'} by {key}"
        if node.get("type") == "item_reference":  # a stored response's item, read by its id
            return "an item_reference (an item the provider stored)"
        tool_call = isinstance(node.get("type"), str) and node["type"].endswith("tool_use")
        stack.extend(v for k, v in node.items() if not (tool_call and k == "input"))
    return None


# How long a forwarded call waits for room the calls in flight hold in the run's ledger
# (a CLI's client waits minutes for an answer; a call that keeps the room longer is a
# generation being billed)
RESERVE_WAIT = 60.0


class Ledger:
    """A session's budget in USD: a call reserves its worst case before it is forwarded and
    settles to its actual cost after, so calls in flight together can never spend past it."""

    def __init__(self, budget: float | None, run: RunLedger | None = None, kind: str = "agent"):
        self.budget = budget
        self.run = run  # the run's ledger: a call must fit there too, across all sessions
        self.kind = kind  # what the run's ledger counts these calls as
        self._own = RunLedger(budget)  # the session's share, held by the same rules

    @property
    def spent(self) -> float:
        return self._own.snapshot().spent

    @property
    def reserved(self) -> float:
        return self._own.snapshot().reserved

    def reserve(self, amount: float | None) -> bool:
        """Hold `amount` for one call; False when what is left cannot cover it. An unknown
        amount (no price for the model) passes only where neither ledger has a ceiling. A
        call the spend alone leaves room for waits up to RESERVE_WAIT for the calls in flight
        to settle (RunLedger.reserve says why), here and in the run's ledger; the session's
        share is held meanwhile and given back if the run refuses."""
        deadline = time.monotonic() + RESERVE_WAIT
        if not self._own.reserve(amount, wait=RESERVE_WAIT):
            return False
        wait = max(0.0, deadline - time.monotonic())
        if self.run is not None and not self.run.reserve(amount, wait=wait):
            self._own.settle(amount, None)
            return False
        return True

    def settle(self, reserved: float | None, actual: float | None) -> None:
        """The call is over: release its reservation, count what it cost."""
        self._own.settle(reserved, actual, self.kind)
        if self.run is not None:
            self.run.settle(reserved, actual, self.kind)


class _GeminiHead(
    msgspec.Struct,
    frozen=True,
    rename={
        "config": "generationConfig",
        "cached": "cachedContent",
        "system": "systemInstruction",
    },
):
    """What the broker reads of a Gemini API body (the model is in the path). The API also
    takes the proto's own field names (`generation_config`, `max_output_tokens`): those are
    read too, so an output cap or a cached content cannot pass under the other spelling."""

    config: dict[str, object] | None = None
    generation_config: dict[str, object] | None = None
    tools: list[dict[str, object]] | None = None
    cached: object | None = None
    cached_content: object | None = None
    model: object | None = None
    contents: Any = None
    system: Any = None
    system_instruction: Any = None


# a client tool is a list of function declarations; every other kind (googleSearch, urlContext,
# codeExecution, googleMaps, fileSearch, computerUse, retrieval, ...) the provider runs itself
_CLIENT_TOOL = {"functionDeclarations", "function_declarations"}


def _count(config: dict[str, object], camel: str, snake: str) -> int | None:
    """A count of the generation config under either spelling; Refused for both, or for one
    that is not a whole number at least 0."""
    found = [config[k] for k in (camel, snake) if k in config]
    if len(found) > 1:
        raise _bad(f"generationConfig has both {camel} and {snake}")
    if not found:
        return None
    value = found[0]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad(f"generationConfig.{camel} must be a whole number at least 0")
    return value


# a part's data the model wrote (a call's arguments) or a tool returned as JSON: not content
_GEMINI_DATA = {"args", "response"}


def _gemini_fetched(roots: tuple[Any, ...]) -> str | None:
    """The first part the provider would fetch from elsewhere, named: a `fileData` (a Files
    API upload or a URL), in any turn, the system instruction or a function response's parts.
    A function call's `args` and a function response's `response` are JSON data, not parts."""
    stack = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        for key in ("fileData", "file_data"):
            if node.get(key) is not None:
                return f"a {key} part"
        for key, value in node.items():
            inner = key in (
                "functionCall",
                "function_call",
                "functionResponse",
                "function_response",
            )
            if inner and isinstance(value, dict):
                stack.extend(v for k, v in value.items() if k not in _GEMINI_DATA)
            else:
                stack.append(value)
    return None


def read_gemini_head(body: bytes, model: str | None) -> Head:
    """A Gemini API body's head, with `model` (from the path) as its model; Refused (400)
    for what the broker cannot account for or the sandbox must not use: more than one
    candidate, a server-run tool, a cached content (the key owner's stored context), a part
    the provider would fetch itself (`fileData`), a second model in the body."""
    _one_value_a_key(body)
    try:
        head = msgspec.json.decode(body, type=_GeminiHead)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise _bad(f"the body is not a model request: {str(exc)[:200]}") from None
    if model is None:
        raise _bad("no model named in the path")
    if head.config is not None and head.generation_config is not None:
        raise _bad("the body has both generationConfig and generation_config")
    config = head.config or head.generation_config or {}
    most = _count(config, "maxOutputTokens", "max_output_tokens")
    if _count(config, "candidateCount", "candidate_count") not in (None, 1):
        raise _bad("candidateCount: the broker forwards one candidate a call")
    hosted = [k for tool in head.tools or () for k in tool if k not in _CLIENT_TOOL]
    if hosted:
        raise _bad(
            f"server tool {hosted[0]!r}: the provider would run it (web access, and fees) "
            "for a sandbox that has no network; sessions use their own tools"
        )
    if head.cached is not None or head.cached_content is not None:
        raise _bad("cachedContent: a sandbox may not read the key owner's stored contexts")
    fetched = _gemini_fetched((head.contents, head.system, head.system_instruction))
    if fetched:
        raise _bad(
            f"{fetched}: the provider would fetch it itself (an uploaded file of the key's "
            "owner, or a URL), for a sandbox that has no network; send it as inlineData"
        )
    if head.model is not None and head.model not in (model, f"models/{model}"):
        raise _bad(f"the body names the model {head.model!r}, the path {model!r}")
    inline = _gemini_inline((head.contents, head.system, head.system_instruction))
    heard = _gemini_heard(inline)
    if heard:
        raise _bad(
            f"{heard} inlineData: Gemini bills audio (a video's sound too) above the text rate "
            "its usage is counted at; send a transcript or frames as images"
        )
    # the API bills an image by its tiles and audio and video by their seconds, none by bytes
    media = MEDIA_TOKENS if inline else 0
    tools = TOOL_PROMPT_TOKENS if head.tools else 0
    return Head(model=model, max_output_tokens=most, unseen_tokens=media + tools)
