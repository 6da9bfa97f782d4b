"""The driver's model relay holds the real key for every worker, so it applies the broker's
rules itself: what a worker's token can reach is exactly what a session's broker forwards
(its wire's endpoints, POST, the run's models, one choice, no server tools, under the
run's --max-cost). The upstream is a recorder: what the provider would receive is seen."""

from __future__ import annotations

import httpx
import pytest

from skillbench.broker import allowed_models
from skillbench.cluster.relay import DriverRelay
from tests.test_broker_access import upstream  # noqa: F401  (the recording provider)

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
