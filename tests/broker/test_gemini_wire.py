"""The broker's Gemini wire as an attacker in the sandbox sees it (docs/trust.md): the model is
named in the request path, so the path is where a run's model check could be dodged (an
encoded `/`, `..`, a second `:` verb, another model after `%2F`), where a key could be echoed
(`?key=`) and where endpoints the CLI never calls live (files, cached contents, batches,
tuned models). The body is where an output cap, a second candidate or a server-run tool could
be hidden, and the stream is where a usage block could be forged. A real broker, over HTTP,
in front of the real fake model server (or a recorder in front of it)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from skillbench.broker.limits import Refused, read_gemini_head
from skillbench.broker.server import Broker
from skillbench.broker.wire import WIRES, route, upstream_url
from skillbench.models.base import Usage
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.pricing import cost_usd, worst_case_usd
from skillbench.models.script import parse_script
from tests.security.test_broker_attacks import post_as_relay

MODEL = "gemini-2.5-pro"
REAL_KEY = "AIzaSy-REALKEY-gemini-wire-4417"
MARK = "gemini-wire-9c1"
STREAM = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
GENERATE = f"/v1beta/models/{MODEL}:generateContent"
GEMINI = WIRES["gemini"]


FILES = "https://generativelanguage.googleapis.com/v1beta/files"


def _content(part: dict[str, Any]) -> dict[str, Any]:
    """A body's extra `contents`: a first user turn, then one holding `part`."""
    return {"contents": [{"role": "user", "parts": [{"text": MARK}, part]}]}


def body(text: str = MARK, **extra: Any) -> bytes:
    return json.dumps({"contents": [{"role": "user", "parts": [{"text": text}]}], **extra}).encode()


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (GENERATE, f"https://g.example/v1beta/models/{MODEL}:generateContent"),
        (STREAM, f"https://g.example/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"),
        (
            f"/v1beta/models/{MODEL}:countTokens",
            f"https://g.example/v1beta/models/{MODEL}:countTokens",
        ),
    ],
)
def test_the_gemini_validator_passes_the_clis_own_endpoints(target: str, expected: str) -> None:
    endpoint = route(GEMINI, target)
    assert endpoint.model == MODEL
    assert str(upstream_url("https://g.example", endpoint)) == expected


@pytest.mark.parametrize(
    "target",
    [
        f"/v1beta/models/{MODEL}%2F..%2Fgemini-3-pro:generateContent",  # another model after /
        f"/v1beta/models/{MODEL}%2fgemini-3-pro:generateContent",
        f"/v1beta/models/{MODEL}/../gemini-3-pro:generateContent",
        "/v1beta/models/..:generateContent",
        "/v1beta/models/.:generateContent",
        f"/v1beta/models/{MODEL}:generateContent:batchGenerateContent",  # a second verb
        f"/v1beta/models/{MODEL}:streamGenerateContent:generateContent?alt=sse",
        f"/v1beta/models/{MODEL}%3AbatchGenerateContent",
        f"/v1beta/models/{MODEL}:generateContent?key={REAL_KEY}",  # a key to echo
        f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key=x",
        f"/v1beta/models/{MODEL}:streamGenerateContent?key=x&alt=sse",
        f"/v1beta/models/{MODEL}:streamGenerateContent",  # a JSON array: no usage to read
        f"/v1beta/models/{MODEL}:streamGenerateContent?alt=json",
        f"/v1beta/models/{MODEL}:batchGenerateContent",
        f"/v1beta/models/{MODEL}:embedContent",
        f"/v1beta/models/{MODEL}:generatecontent",
        f"/v1beta/models/{MODEL}:generateContent/",
        f"/v1beta/models/{MODEL}:generateContent#x",
        f"/v1beta/models/{MODEL}",
        f"/v1/models/{MODEL}:generateContent",
        f"/v1beta/tunedModels/{MODEL}:generateContent",
        "/v1beta/models/@evil.example:generateContent",
        f"http://evil.example/v1beta/models/{MODEL}:generateContent",
        f"//evil.example/v1beta/models/{MODEL}:generateContent",
        "/v1beta/cachedContents",
        "/v1beta/files",
        "/upload/v1beta/files",
        "/v1beta/models",
        "/v1/messages",
    ],
)
def test_the_gemini_validator_refuses_everything_else(target: str) -> None:
    with pytest.raises(Refused) as refused:
        route(GEMINI, target)
    assert refused.value.status == 404


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"generationConfig": {"candidateCount": 2}}, "candidateCount"),
        ({"generation_config": {"candidate_count": 3}}, "candidateCount"),
        ({"generationConfig": {"maxOutputTokens": -1}}, "at least 0"),
        ({"generationConfig": {"maxOutputTokens": True}}, "whole number"),
        ({"generationConfig": {"maxOutputTokens": "9999999"}}, "whole number"),
        ({"generationConfig": {"maxOutputTokens": 8, "max_output_tokens": 10**9}}, "both"),
        ({"generationConfig": {}, "generation_config": {"max_output_tokens": 10**9}}, "both"),
        ({"tools": [{"googleSearch": {}}]}, "googleSearch"),
        ({"tools": [{"functionDeclarations": []}, {"codeExecution": {}}]}, "codeExecution"),
        ({"tools": [{"url_context": {}}]}, "url_context"),
        ({"cachedContent": "cachedContents/abc"}, "cachedContent"),
        ({"cached_content": "cachedContents/abc"}, "cachedContent"),
        ({"model": "models/gemini-3-pro"}, "names the model"),
        # content the provider would fetch itself: the key owner's uploaded files, a URL
        (_content({"fileData": {"fileUri": f"{FILES}/abc", "mimeType": "text/plain"}}), "file"),
        (_content({"file_data": {"file_uri": "https://example.com/a.pdf"}}), "file"),
        (
            {"systemInstruction": {"parts": [{"fileData": {"fileUri": f"{FILES}/abc"}}]}},
            "file",
        ),
        (
            _content(
                {"functionResponse": {"name": "read", "parts": [{"fileData": {"fileUri": "x"}}]}}
            ),
            "file",
        ),
    ],
)
def test_a_gemini_body_the_broker_cannot_account_for_is_refused(
    extra: dict[str, Any], why: str
) -> None:
    with pytest.raises(Refused) as refused:
        read_gemini_head(body(**extra), MODEL)
    assert refused.value.status == 400 and why in refused.value.message


def test_a_tool_calls_own_arguments_and_a_tools_result_are_not_read_as_content() -> None:
    # the model's JSON replayed, and a tool's output: data, not parts the provider fetches
    call = {"functionCall": {"name": "w", "args": {"fileData": {"fileUri": f"{FILES}/a"}}}}
    result = {"functionResponse": {"name": "w", "response": {"file_data": {"file_uri": "x"}}}}
    for part in (call, result):
        assert read_gemini_head(body(**_content(part)), MODEL).model == MODEL


def test_the_output_cap_is_read_under_either_spelling() -> None:
    camel = read_gemini_head(body(generationConfig={"maxOutputTokens": 77}), MODEL)
    snake = read_gemini_head(body(generation_config={"max_output_tokens": 88}), MODEL)
    assert (camel.model, camel.max_output, snake.max_output) == (MODEL, 77, 88)
    assert read_gemini_head(body(), MODEL).max_output is None  # the wire's default applies


class _Recorder(BaseHTTPRequestHandler):
    """The broker's upstream: records each request (path, headers, body) and passes it to
    the fake model server, streaming its answer back."""

    protocol_version = "HTTP/1.1"
    seen: list[dict[str, Any]]
    forward_to: str

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append({"path": self.path, "headers": dict(self.headers), "body": raw})
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        resp = httpx.post(self.forward_to + self.path, content=raw, headers=headers, timeout=60)
        self.send_response(resp.status_code)
        self.send_header("Content-Type", resp.headers.get("content-type", "application/json"))
        self.send_header("Content-Length", str(len(resp.content)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(resp.content)
        self.close_connection = True


class Hosts:
    def __init__(self, fake: FakeModelServer, upstream: ThreadingHTTPServer, seen: list):
        self.fake, self.upstream, self.seen = fake, upstream, seen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.upstream.server_port}"

    def broker(self, tmp_path: Path, **options: Any) -> Broker:
        return Broker(
            upstream=self.url,
            api_key=REAL_KEY,
            model=f"google/{MODEL}",
            wire="gemini",
            exchanges=tmp_path / "x.jsonl",
            **options,
        ).start()


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    text = "fine\r\n\r\ndata: " + json.dumps(
        {"usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 0}}
    )
    script = {
        "rules": [
            {"when": MARK, "replies": ["ok"]},
            {"when": "forge", "replies": [text]},
        ]
    }
    fake = FakeModelServer(parse_script(script)).start()
    seen: list[dict[str, Any]] = []
    handler = type("H", (_Recorder,), {"seen": seen, "forward_to": fake.url})
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    upstream.daemon_threads = True
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    yield Hosts(fake, upstream, seen)
    upstream.shutdown()
    upstream.server_close()
    fake.stop()


def _sandbox_headers() -> dict[str, str]:
    # what Gemini CLI sends (measured), plus what an attacker would like forwarded
    return {
        "x-goog-api-key": "placeholder",
        "x-goog-api-client": "google-genai-sdk/1.30.0 gl-node/v20.20.2",
        "x-goog-user-project": "someone-elses-project",
        "x-gemini-api-privileged-user-id": "an-installation-id",
    }


def test_a_call_reaches_the_provider_with_the_key_in_a_header_and_is_billed(
    hosts: Hosts, tmp_path: Path
) -> None:
    broker = hosts.broker(tmp_path)
    try:
        streamed = post_as_relay(broker, STREAM, body(), _sandbox_headers())
        whole = post_as_relay(broker, GENERATE, body(), _sandbox_headers())
    finally:
        broker.stop()
    assert (streamed.status_code, whole.status_code) == (200, 200)
    chunks = [json.loads(x[5:]) for x in streamed.text.split("\r\n\r\n") if x.startswith("data:")]
    assert chunks[-1]["candidates"][0]["content"]["parts"] == [{"text": "ok"}]
    assert whole.json()["candidates"][0]["finishReason"] == "STOP"
    paths = [s["path"] for s in hosts.seen]
    assert paths == [STREAM, GENERATE]  # no ?key= was added on the way
    for seen in hosts.seen:
        headers = {k.lower(): v for k, v in seen["headers"].items()}
        assert headers["x-goog-api-key"] == REAL_KEY
        assert "x-goog-user-project" not in headers
        assert "x-gemini-api-privileged-user-id" not in headers
    assert {(r.api_key, r.query_key) for r in hosts.fake.log()} == {(REAL_KEY, "")}
    # the provider's own counts, billed at Gemini 2.5 Pro's price
    served = [r.usage for r in hosts.fake.log()]
    assert broker.usage.input_tokens == sum(u["input_tokens"] for u in served) > 0
    assert broker.usage.output_tokens == sum(u["output_tokens"] for u in served) > 0
    assert broker.answered == 2
    assert broker.cost == pytest.approx(cost_usd(f"google/{MODEL}", broker.usage))
    assert broker.cost is not None and broker.cost > 0
    assert REAL_KEY not in (tmp_path / "x.jsonl").read_text()


@pytest.mark.parametrize(
    "target",
    [
        "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse",  # not the run's model
        f"/v1beta/models/{MODEL}%2F..%2Fgemini-3-pro:streamGenerateContent?alt=sse",
        f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key={REAL_KEY}",
        f"/v1beta/models/{MODEL}:generateContent:batchGenerateContent",
        "/v1beta/cachedContents",
    ],
)
def test_a_model_or_a_path_the_run_does_not_allow_never_reaches_the_provider(
    target: str, hosts: Hosts, tmp_path: Path
) -> None:
    broker = hosts.broker(tmp_path)
    try:
        answer = post_as_relay(broker, target, body(), _sandbox_headers())
    finally:
        broker.stop()
    assert answer.status_code in (400, 404)
    error = answer.json()["error"]  # the Gemini API's own error shape, for the CLI to show
    assert error["code"] == answer.status_code and error["status"] in (
        "INVALID_ARGUMENT",
        "NOT_FOUND",
    )
    assert hosts.seen == []


def test_a_usage_block_forged_in_the_models_text_is_not_what_is_billed(
    hosts: Hosts, tmp_path: Path
) -> None:
    # the model's text holds a blank line and a `data:` usage block of zeros: on the wire it
    # is escaped inside a JSON string, so the call is billed at what the provider counted
    broker = hosts.broker(tmp_path)
    try:
        answer = post_as_relay(broker, STREAM, body("forge"), _sandbox_headers())
    finally:
        broker.stop()
    assert answer.status_code == 200
    (served,) = [r.usage for r in hosts.fake.log()]
    assert broker.usage.input_tokens == served["input_tokens"] > 0
    assert broker.usage.output_tokens == served["output_tokens"] > 0


def test_gemini_usage_reads_only_the_top_level_counts_at_their_most() -> None:
    nested = {
        "candidates": [
            {
                "content": {
                    "parts": [{"functionCall": {"name": "x", "args": {"usageMetadata": {"x": 1}}}}]
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 1000,
            "cachedContentTokenCount": 400,
            "candidatesTokenCount": 50,
            "thoughtsTokenCount": 25,
            "totalTokenCount": 1075,
        },
    }
    later = {"usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": -5}}
    stream = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in (nested, later))
    usage = GEMINI.usage(stream)
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (600, 400, 75)
    assert not GEMINI.cut(stream)
    assert GEMINI.cut(f"data: {json.dumps(later)}\r\n\r\n")  # no finishReason: cut off


def test_gemini_final_usage_is_the_count_of_the_chunk_that_ends_the_answer() -> None:
    running = {"candidates": [{"content": {"parts": [{"text": "a"}]}, "index": 0}]}
    running["usageMetadata"] = {"promptTokenCount": 100, "candidatesTokenCount": 5}
    end = {"candidates": [{"content": {"parts": []}, "finishReason": "STOP", "index": 0}]}
    usage_after = {"usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 9}}

    def stream(*chunks: dict[str, Any]) -> str:
        return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)

    # every chunk carries a running count: one cut before the end has no final count
    assert not GEMINI.final(stream(running, running))
    assert not GEMINI.final(stream(running, end))  # the end, but no count at or after it
    assert GEMINI.final(stream(running, {**end, **usage_after}))
    assert GEMINI.final(stream(running, end, usage_after))
    assert GEMINI.final(json.dumps({**end, **usage_after}))  # a whole generateContent body
    assert not GEMINI.final(json.dumps({**end, **usage_after})[:-9])  # a body cut short


def test_a_gemini_stream_cut_before_its_end_is_billed_its_reservation(tmp_path: Path) -> None:
    script = {
        "rules": [
            {"when": "cut", "replies": ["never"], "faults": [{"midstream": True, "times": 9}]},
            {"when": MARK, "replies": ["ok"]},
        ]
    }
    fake = FakeModelServer(parse_script(script)).start()
    broker = Broker(
        upstream=fake.url,
        api_key=REAL_KEY,
        model=f"google/{MODEL}",
        wire="gemini",
        exchanges=tmp_path / "x.jsonl",
        budget=5.0,
    ).start()
    capped = {"generationConfig": {"maxOutputTokens": 4000}}
    try:
        cut = post_as_relay(broker, STREAM, body("cut", **capped), _sandbox_headers())
        whole = post_as_relay(broker, STREAM, body(**capped), _sandbox_headers())
    finally:
        broker.stop()
        fake.stop()
    assert (cut.status_code, whole.status_code) == (200, 200)
    rows = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    size = len(body("cut", **capped))
    worst = worst_case_usd(f"google/{MODEL}", size, 4000)
    # the cut call had a running count (1 prompt token) but costs its whole reservation
    assert worst is not None and rows[0]["cost_usd"] == pytest.approx(worst)
    assert rows[0]["usage"]["input_tokens"] == 1 and "reservation" in rows[0]["billed"]
    # the whole one is billed at its own count, far under its reservation
    served = fake.log()[-1].usage
    usage = Usage(served["input_tokens"], served["output_tokens"])
    assert rows[1]["cost_usd"] == pytest.approx(cost_usd(f"google/{MODEL}", usage))
    assert "billed" not in rows[1] and rows[1]["cost_usd"] < worst / 100


def test_gemini_2_5_pro_bills_a_prompt_over_200k_tokens_at_its_long_context_rates() -> None:
    ref = f"google/{MODEL}"
    over = Usage(input_tokens=150_000, output_tokens=10_000, cache_read_tokens=60_000)
    under = Usage(input_tokens=140_000, output_tokens=10_000, cache_read_tokens=60_000)
    # over 200k (cached tokens count): $2.50 input, $0.25 a cache read, $15 output per Mtok
    assert cost_usd(ref, over) == pytest.approx(0.375 + 0.015 + 0.15)
    assert cost_usd(ref, under) == pytest.approx(0.175 + 0.0075 + 0.1)
    assert worst_case_usd(ref, 300_000, 10_000) == pytest.approx(0.75 + 0.15)
    # Flash is one rate at any length
    assert cost_usd("google/gemini-2.5-flash", over) == pytest.approx(0.045 + 0.0018 + 0.025)


def test_an_oversized_output_cap_cannot_outspend_the_budget(hosts: Hosts, tmp_path: Path) -> None:
    broker = hosts.broker(tmp_path, budget=1.0)
    huge = {"generationConfig": {"maxOutputTokens": 10**9}}
    snake = {"generation_config": {"max_output_tokens": 10**9}}
    try:
        answers = [
            post_as_relay(broker, STREAM, body(**extra), _sandbox_headers())
            for extra in (huge, snake, {})
        ]
    finally:
        broker.stop()
    # the first two reserve 10^9 output tokens ($10,000); the third the wire's default cap
    # (65,536 tokens, $0.66) and passes
    assert [a.status_code for a in answers] == [400, 400, 200]
    assert all("--max-cost" in a.json()["error"]["message"] for a in answers[:2])
    assert len(hosts.seen) == 1 and broker.exhausted


# Runs inside a real gemini-cli sandbox as the agent's shell step: raw HTTP/1.1 to the relay,
# so nothing normalises the request target on the way; prints {attack: status}.
ATTACKER = r"""
import json, os, socket
PORT, MARK, MODEL = 8380, "gemini-wire-9c1", "gemini-2.5-pro"
KEY = os.environ["GEMINI_API_KEY"]  # the session's placeholder, as its CLI sends it

def body(**extra):
    user = {"role": "user", "parts": [{"text": MARK}]}
    return json.dumps({"contents": [user], **extra}).encode()

def send(target, data):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    head = "POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" % target
    head += "x-goog-api-key: %s\r\ncontent-length: %d\r\n\r\n" % (KEY, len(data))
    s.sendall(head.encode() + data)
    line = s.makefile("rb").readline()
    s.close()
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 else "eof"

M = "/v1beta/models/"
out = {
    "allowed": send(M + MODEL + ":streamGenerateContent?alt=sse", body()),
    "other_model": send(M + "gemini-3-pro:streamGenerateContent?alt=sse", body()),
    "encoded_slash": send(M + MODEL + "%2F..%2Fgemini-3-pro:generateContent", body()),
    "dotdot": send(M + MODEL + "/../gemini-3-pro:generateContent", body()),
    "second_verb": send(M + MODEL + ":generateContent:batchGenerateContent", body()),
    "query_key": send(M + MODEL + ":streamGenerateContent?alt=sse&key=x", body()),
    "key_only": send(M + MODEL + ":generateContent?key=x", body()),
    "files": send("/upload/v1beta/files", body()),
    "cached": send("/v1beta/cachedContents", body()),
    "two_candidates": send(M + MODEL + ":generateContent", body(generationConfig={"candidateCount": 2})),
    "search": send(M + MODEL + ":generateContent", body(tools=[{"googleSearch": {}}])),
    "body_model": send(M + MODEL + ":generateContent", body(model="models/gemini-3-pro")),
}
print("ATTACKS " + json.dumps(out, sort_keys=True))
"""


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_from_a_gemini_cli_sandbox_only_the_wires_own_calls_reach_the_provider(
    hosts: Hosts, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import base64

    from tests.helpers import conv, run_eval, skill

    # (Gemini CLI refuses a command substitution: the script goes in encoded)
    encoded = base64.b64encode(ATTACKER.encode()).decode()
    step = {
        "tool_calls": [
            {"run_shell_command": {"command": f"echo {encoded} | base64 -d | python3 -"}}
        ]
    }
    script = {
        "rules": [{"when": MARK, "replies": ["ok"]}],
        "conversations": [conv("(?s)", "Create hello.txt", step, {"text": "done"})],
    }
    fake = FakeModelServer(parse_script(script)).start()
    hosts.upstream.RequestHandlerClass.forward_to = fake.url  # type: ignore[attr-defined]
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", hosts.url)
    monkeypatch.setenv("GEMINI_API_KEY", REAL_KEY)
    folder = skill(
        tmp_path,
        {"evals/cases/hello.yaml": "task: Create hello.txt\nchecks: [{file_exists: hello.txt}]\n"},
        config='agent = "gemini-cli"\n',
    )
    try:
        run_eval(
            capsys,
            folder,
            tmp_path / "run",
            "--execution-only",
            "--model",
            f"google/{MODEL}",
            "--case",
            "hello",
        )
    finally:
        fake.stop()
    events = [
        json.loads(x)
        for x in (tmp_path / "run/transcripts/hello.baseline.1.jsonl").read_text().splitlines()
    ]
    said = "\n".join(e["text"] for e in events if e["type"] == "tool_result")
    line = next(x for x in said.splitlines() if x.startswith("ATTACKS "))
    attacks = json.loads(line.removeprefix("ATTACKS "))
    assert attacks.pop("allowed") == 200
    assert {name: status in (400, 404) for name, status in attacks.items()} == dict.fromkeys(
        attacks, True
    ), attacks
    # the provider saw the CLI's own calls and the one allowed call, with the real key in its
    # header, on the run's model, never a ?key=
    assert hosts.seen and {s["path"] for s in hosts.seen} == {STREAM}
    assert {
        {k.lower(): v for k, v in s["headers"].items()}["x-goog-api-key"] for s in hosts.seen
    } == {REAL_KEY}
    assert sum(MARK.encode() in s["body"] for s in hosts.seen) == 2  # one per arm
    assert {(r.api_key, r.query_key) for r in fake.log()} == {(REAL_KEY, "")}
    leaked = [
        p
        for p in (tmp_path / "run").rglob("*")
        if p.is_file() and REAL_KEY.encode() in p.read_bytes()
    ]
    assert leaked == []
