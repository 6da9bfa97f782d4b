"""The driver's model relay holds the real key for every worker, so it applies the broker's
rules itself: what a worker's token can reach is exactly what a session's broker forwards
(its wire's endpoints, POST, the run's models, one choice, no server tools, under the
run's --max-cost). The upstream is a recorder: what the provider would receive is seen."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from skillbench.broker.server import allowed_models
from skillbench.cluster.relay import DriverRelay
from skillbench.models.base import Usage
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.pricing import cost_usd, worst_case_usd
from skillbench.models.script import parse_script
from tests.broker.test_broker_access import upstream  # noqa: F401  (the recording provider)
from tests.security.test_broker_billing_attacks import (  # noqa: F401  (serve: a fixture)
    _ChatStream,
    _chunks,
    _Generating,
    _LongContext,
    serve,
)

_BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.fixture
def relay(upstream, monkeypatch: pytest.MonkeyPatch):  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream[0])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-driver-key")
    r = DriverRelay(models=allowed_models("anthropic/claude-sonnet-4-6"), budget=1.0).start()
    yield r, upstream[1]
    r.stop()


def _post(r: DriverRelay, body: dict, path: str = "/anthropic/v1/messages") -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{r.port}{path}", json=body, headers={"x-api-key": r.token}, timeout=30
    )


def test_the_token_reaches_the_run_model_with_the_real_key(relay) -> None:
    r, seen = relay
    assert _post(r, _BODY).status_code == 200
    assert _post(r, _BODY, "/anthropic/v1/messages?beta=true").status_code == 200
    assert [s["x-api-key"] for s in seen] == ["sk-real-driver-key"] * 2


@pytest.mark.parametrize(
    "change",
    [
        {"model": "claude-opus-4-1"},  # a model the run does not use
        {"max_tokens": 10_000_000},  # a worst case past the run's --max-cost
        {"max_tokens": None},  # no cap at all
        {"n": 8},
        {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
    ],
    ids=["model", "max_tokens", "no-cap", "n", "server-tool"],
)
def test_the_token_cannot_go_past_the_brokers_rules(relay, change: dict) -> None:
    r, seen = relay
    body = {k: v for k, v in {**_BODY, **change}.items() if v is not None}
    assert _post(r, body).status_code == 400
    assert seen == []


def test_the_token_cannot_get_or_reach_other_endpoints(relay) -> None:
    r, seen = relay
    auth = {"x-api-key": r.token}
    base = f"http://127.0.0.1:{r.port}"
    assert httpx.get(f"{base}/anthropic/v1/messages", headers=auth).status_code == 405
    for path in ("/anthropic/v1/models", "/anthropic/v1/files", "/openai/files", "/x/v1/messages"):
        assert httpx.post(base + path, json=_BODY, headers=auth).status_code == 404, path
    huge = b"{" + b" " * (33 << 20) + b"}"
    assert (
        httpx.post(f"{base}/anthropic/v1/messages", content=huge, headers=auth).status_code == 413
    )
    assert seen == []


# The relay bills as the broker does (broker_billing.bill), so a worker cannot get a call
# counted as less than it cost either: the rules below are the broker's billing attacks,
# replayed against the relay (tests/security/test_broker_billing_attacks.py).


def _start(
    monkeypatch: pytest.MonkeyPatch, url: str, model: str, budget: float = 5.0
) -> DriverRelay:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    return DriverRelay(models=allowed_models(model), budget=budget).start()


@pytest.mark.parametrize(
    "change",
    [
        {"background": True},
        {"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url"}}]}]},
    ],
    ids=["background", "url-source"],
)
def test_the_token_cannot_detach_generation_or_fetch_a_url(relay, change: dict) -> None:
    r, seen = relay
    assert _post(r, {**_BODY, **change}).status_code == 400
    assert seen == []


def test_the_relay_bills_server_tool_fees(monkeypatch, serve) -> None:  # noqa: F811
    usage = {"input_tokens": 3, "output_tokens": 1, "server_tool_use": {"web_search_requests": 50}}
    handler = type("H", (_LongContext,), {"usages": [usage]})
    r = _start(monkeypatch, serve(handler), "anthropic/claude-sonnet-4-6")
    try:
        assert _post(r, _BODY).status_code == 200
    finally:
        r.stop()
    tokens = cost_usd("anthropic/claude-sonnet-4-6", Usage(input_tokens=3, output_tokens=1))
    assert tokens is not None and r.ledger.spent == pytest.approx(tokens + 0.5)  # 50 x $0.01


def test_the_relay_asks_a_chat_stream_for_its_usage(monkeypatch, serve) -> None:  # noqa: F811
    handler = type("H", (_ChatStream,), {"asked": []})
    r = _start(monkeypatch, serve(handler), "openai/gpt-5")
    body = {
        "model": "gpt-5",
        "stream": True,
        "max_completion_tokens": 4000,
        "messages": [{"role": "user", "content": "write"}],
    }
    try:
        reply = _post(r, body, "/openai/chat/completions")
    finally:
        r.stop()
    assert reply.status_code == 200 and handler.asked == [True]
    chunks = _chunks(reply.content)
    assert len(chunks) == 41 and all(len(c["choices"]) == 1 for c in chunks)  # none usage-only
    one = cost_usd("openai/gpt-5", Usage(input_tokens=10, output_tokens=4000))
    assert r.ledger.spent == pytest.approx(one)


def test_a_worker_that_hangs_up_before_the_count_is_billed_the_reservation(
    monkeypatch,
    serve,  # noqa: F811
) -> None:
    handler = type("H", (_Generating,), {"generated": []})
    r = _start(monkeypatch, serve(handler), "anthropic/claude-sonnet-4-6", budget=1.0)
    body = json.dumps({**_BODY, "max_tokens": 8000, "stream": True}).encode()
    try:
        with socket.create_connection(("127.0.0.1", r.port), timeout=30) as s:
            s.sendall(
                b"POST /anthropic/v1/messages HTTP/1.1\r\nhost: x\r\n"
                + f"x-api-key: {r.token}\r\ncontent-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            seen = b""
            while seen.count(b"event: content_block_delta") < 5:
                seen += s.recv(65536)
        deadline = time.monotonic() + 10
        while r.ledger.reserved > 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        r.stop()
    worst = worst_case_usd("anthropic/claude-sonnet-4-6", len(body), 8000)
    assert worst is not None and r.ledger.spent == pytest.approx(worst)


# --- the Gemini wire: the model in the path, the key a header ------------------------------

_GEMINI_STREAM = "/google/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
_GEMINI_BODY = {
    "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    "generationConfig": {"maxOutputTokens": 64},
}


@pytest.fixture
def gemini(monkeypatch: pytest.MonkeyPatch):
    """A relay for a Gemini run in front of the fake model server (which logs the key it was
    sent, as a header and as a query)."""
    server = FakeModelServer(
        parse_script({"rules": [{"when": "hi", "replies": ["hello"]}]})
    ).start()
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    monkeypatch.setenv("GEMINI_API_KEY", "real-driver-gemini-key")
    r = DriverRelay(models=allowed_models("google/gemini-2.5-pro"), budget=1.0).start()
    yield r, server
    r.stop()
    server.stop()


def _gpost(r: DriverRelay, path: str, body: dict | None = None, **headers: str) -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{r.port}{path}",
        content=json.dumps(_GEMINI_BODY if body is None else body).encode(),
        headers={"content-type": "application/json", "x-goog-api-key": r.token, **headers},
        timeout=30,
    )


def test_a_gemini_call_reaches_the_run_model_with_the_key_as_a_header_and_is_billed(
    gemini,
) -> None:
    r, server = gemini
    reply = _gpost(r, _GEMINI_STREAM)
    assert reply.status_code == 200 and "hello" in reply.text
    assert _gpost(r, "/google/v1beta/models/gemini-2.5-pro:generateContent").status_code == 200
    assert _gpost(r, "/google/v1beta/models/gemini-2.5-pro:countTokens").status_code == 200
    log = server.log("gemini")
    assert [(x.api_key, x.query_key) for x in log] == [("real-driver-gemini-key", "")] * 3
    assert [x.path for x in log] == [
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        "/v1beta/models/gemini-2.5-pro:generateContent",
        "/v1beta/models/gemini-2.5-pro:countTokens",
    ]
    assert r.ledger.spent > 0 and r.ledger.reserved == 0  # billed from the answers' usage
    assert "real-driver-gemini-key" not in reply.text


@pytest.mark.parametrize(
    ("path", "status"),
    [
        # a model the run does not use, named in the path
        ("/google/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", 400),
        ("/google/v1beta/models/gemini-3-pro-preview:generateContent", 400),
        # a key in the query (echoed by a provider's error, kept in its logs) or another query
        (f"{_GEMINI_STREAM}&key=TOKEN", 404),
        ("/google/v1beta/models/gemini-2.5-pro:generateContent?key=TOKEN", 404),
        ("/google/v1beta/models/gemini-2.5-pro:streamGenerateContent", 404),
        # other verbs, other resources, names that are not plain
        ("/google/v1beta/models/gemini-2.5-pro:batchGenerateContent", 404),
        ("/google/v1beta/models/gemini-2.5-pro", 404),
        ("/google/v1beta/files", 404),
        ("/google/v1beta/cachedContents", 404),
        ("/google/v1beta/models/..%2Ffiles:generateContent", 404),
        ("/google/v1beta/models/../files:generateContent", 404),
        ("/google/v1beta/models/gemini-2.5-pro@evil.example:generateContent", 404),
        ("/google/v1/models/gemini-2.5-pro:generateContent", 404),
    ],
)
def test_a_gemini_call_past_the_brokers_rules_is_refused_and_never_forwarded(
    gemini, path: str, status: int
) -> None:
    r, server = gemini
    reply = _gpost(r, path.replace("TOKEN", r.token))
    assert reply.status_code == status, reply.text
    assert server.log() == []


@pytest.mark.parametrize(
    "change",
    [
        {"generationConfig": {"maxOutputTokens": 50_000_000}},  # past the run's --max-cost
        {"generationConfig": {"candidateCount": 8}},
        {"tools": [{"googleSearch": {}}]},
    ],
    ids=["max-output", "candidates", "server-tool"],
)
def test_a_gemini_body_past_the_brokers_rules_is_refused(gemini, change: dict) -> None:
    r, server = gemini
    assert _gpost(r, _GEMINI_STREAM, {**_GEMINI_BODY, **change}).status_code == 400
    assert server.log() == []


def test_a_gemini_call_needs_the_token_and_a_query_key_is_no_token(gemini) -> None:
    r, server = gemini
    base = f"http://127.0.0.1:{r.port}"
    assert httpx.post(base + _GEMINI_STREAM, json=_GEMINI_BODY).status_code == 401
    wrong = httpx.post(base + _GEMINI_STREAM, json=_GEMINI_BODY, headers={"x-goog-api-key": "x"})
    assert wrong.status_code == 401
    by_query = httpx.post(f"{base}{_GEMINI_STREAM}&key={r.token}", json=_GEMINI_BODY)
    assert by_query.status_code == 404
    assert server.log() == []


def test_a_cut_gemini_stream_is_billed_its_reservation(monkeypatch) -> None:
    server = FakeModelServer(
        parse_script({"rules": [{"when": "hi", "replies": ["x"], "faults": [{"midstream": True}]}]})
    ).start()
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    monkeypatch.setenv("GEMINI_API_KEY", "real")
    r = DriverRelay(models=allowed_models("google/gemini-2.5-pro"), budget=1.0).start()
    try:
        assert _gpost(r, _GEMINI_STREAM).status_code == 200  # (a 200 that stops mid-answer)
    finally:
        r.stop()
        server.stop()
    body = json.dumps(_GEMINI_BODY).encode()
    worst = worst_case_usd("google/gemini-2.5-pro", len(body), 64)
    assert worst is not None and r.ledger.spent == pytest.approx(worst)
