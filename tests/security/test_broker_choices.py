"""`n` on the OpenAI wires (docs/trust.md): a Chat Completions call for `n` choices is billed
`n` times over while the broker's reservation covers one, so a call asking for more than one
is refused on every wire that would forward it (the openai wire's Chat Completions and
Responses paths, and Copilot CLI's openai-chat wire) before anything is forwarded, reserved or
billed; the one-choice call beside it passes, so the refusal is the `n` and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.broker.server import Broker
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.script import parse_script
from tests.security.test_broker_attacks import post_as_relay

CASES = [
    ("openai", "/v1/chat/completions"),
    ("openai", "/v1/responses"),
    ("openai-chat", "/v1/chat/completions"),
]


def _body(path: str, n: object, stream: bool) -> dict[str, object]:
    if path.endswith("responses"):
        turn = [{"role": "user", "content": "hi"}]
        return {"model": "gpt-5", "input": turn, "max_output_tokens": 16, "n": n, "stream": stream}
    messages = [{"role": "user", "content": "hi"}]
    body: dict[str, object] = {"model": "gpt-5", "messages": messages, "max_tokens": 16}
    return body | {"n": n, "stream": stream}


@pytest.mark.parametrize(("wire", "path"), CASES)
@pytest.mark.parametrize("stream", [False, True])
def test_a_call_for_more_than_one_choice_is_refused_on_every_openai_wire(
    tmp_path: Path, wire: str, path: str, stream: bool
) -> None:
    fake = FakeModelServer(parse_script({"rules": [{"when": "hi", "replies": ["ok"]}]})).start()
    broker = Broker(
        upstream=f"{fake.url}/v1",
        api_key="sk-real",
        model="openai/gpt-5",
        wire=wire,
        exchanges=tmp_path / "x.jsonl",
        budget=5.0,
    ).start()
    try:
        for n in (2, 8, 128):
            body = json.dumps(_body(path, n, stream)).encode()
            reply = post_as_relay(broker, path, body, {"authorization": "Bearer p"})
            assert reply.status_code == 400 and f"n={n}".encode() in reply.content, reply.content
        assert fake.log() == [] and broker.ledger.spent == 0 and broker.ledger.reserved == 0
        assert broker.model_calls == {}
        one = post_as_relay(
            broker, path, json.dumps(_body(path, 1, stream)).encode(), {"authorization": "Bearer p"}
        )
        assert one.status_code == 200, one.content  # the same call for one choice passes
        assert len(fake.log()) == 1 and broker.ledger.spent > 0
        assert broker.model_calls == {"gpt-5": 1}
    finally:
        broker.stop()
        fake.stop()
