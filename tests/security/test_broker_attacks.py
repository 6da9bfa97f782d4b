"""The model broker as an attacker inside the sandbox sees it (docs/trust.md): a process in a real
claude-code sandbox talks to the loopback relay with raw sockets and tries to make the broker
carry the real key somewhere else (`@host`, an absolute URL, `..`, percent-encoding), reach
endpoints the agent never needs (batches, files, models), send a 40 MB body, use a model the run
does not allow, crash it with a deeply nested body, and outspend `--max-cost` with 20 concurrent
calls. The broker's upstream is a recording proxy in front of the fake model server, and an
"evil" server on the host records anything that reaches it: it must receive nothing."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import socket
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from skillbench.agents import AgentError, make_agent
from skillbench.broker.billing import may_have_run
from skillbench.broker.limits import Ledger, Refused, read_body, read_head
from skillbench.broker.server import Broker
from skillbench.broker.wire import WIRES, route, upstream_url
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.ledger import RunLedger
from skillbench.models.script import parse_script
from skillbench.sandbox.podman.channel import CHANNEL_ENV
from tests.conftest import CHANNELS
from tests.helpers import conv, eval_cli, skill

MARK = "broker-attack-7f3"  # the fake server answers requests carrying it by rule
ALLOWED_PATHS = {"/v1/messages", "/v1/messages?beta=true"}

# Runs inside the sandbox as the agent's Bash step: raw HTTP/1.1 to the relay, so nothing
# normalises the request target on the way; prints {attack: status, or why there was none}.
ATTACKER = r"""
import json, os, socket, sys, threading
PORT, MARK, EVIL = 8377, "broker-attack-7f3", sys.argv[1]
KEY = os.environ["ANTHROPIC_API_KEY"]  # the session's placeholder, as its CLI sends it

def body(model="claude-sonnet-4-6", pad=0, max_tokens=16):
    user = {"role": "user", "content": MARK + " " + "x" * pad}
    return json.dumps({"model": model, "max_tokens": max_tokens, "messages": [user]}).encode()

def send(target, data=b"", headers=None, chunks=None, wait=20.0):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=wait)
    head = {"content-type": "application/json", "anthropic-version": "2023-06-01",
            "x-api-key": KEY}
    if chunks is None:
        head["content-length"] = str(len(data))
    else:
        head["transfer-encoding"] = "chunked"
    head.update(headers or {})
    lines = "".join("%s: %s\r\n" % kv for kv in head.items())
    s.sendall(("POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\n%s\r\n" % (target, lines)).encode())
    try:
        if chunks is None:
            s.sendall(data)
        else:
            for c in chunks:
                s.sendall(b"%x\r\n%s\r\n" % (len(c), c))
            s.sendall(b"0\r\n\r\n")
    except OSError:
        pass
    try:
        line = s.makefile("rb").readline()
    except OSError as e:
        line = b""
        err = repr(e)
    else:
        err = "eof"
    s.close()
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 else err

def many(n, make):
    out = [None] * n
    def one(i):
        out[i] = make()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out

mode = sys.argv[2]
if mode == "paths":
    targets = {
        "at_host": "@127.0.0.1:%s/x" % EVIL,
        "at_host_path": "@127.0.0.1:%s/v1/messages" % EVIL,
        "absolute": "http://127.0.0.1:%s/v1/messages" % EVIL,
        "authority_slashes": "//127.0.0.1:%s/v1/messages" % EVIL,
        "dotdot": "/v1/messages/../../x",
        "dotdot_batches": "/v1/messages/../batches",
        "encoded_dotdot": "/v1/%2e%2e/v1/messages/batches",
        "encoded_slash": "/v1/messages%2F..%2Fbatches",
        "encoded_letter": "/v1/%6dessages",
        "batches": "/v1/messages/batches",
        "files": "/v1/files",
        "models": "/v1/models",
        "trailing_slash": "/v1/messages/",
        "double_slash": "/v1//messages",
        "other_query": "/v1/messages?beta=true&x=@127.0.0.1:%s" % EVIL,
        "query_only": "/v1/messages?to=http://127.0.0.1:%s/" % EVIL,
        "fragment": "/v1/messages#@127.0.0.1:%s" % EVIL,
    }
    out = {name: send(t, body()) for name, t in targets.items()}
    out["model"] = send("/v1/messages", body(model="claude-opus-4-1"))
    out["deep"] = send("/v1/messages", b"[" * 200000 + b"]" * 200000)
    out["big_length"] = send("/v1/messages", b"", {"content-length": str(40 << 20)}, wait=8)
    out["big_chunked"] = send("/v1/messages", chunks=[b"x" * (1 << 20)] * 40)
    out["concurrent"] = many(20, lambda: send("/v1/messages", body()))
else:
    out = {"costly": many(20, lambda: send("/v1/messages", body(pad=200000)))}
print("ATTACKS " + json.dumps(out))
"""


class _Recorder(BaseHTTPRequestHandler):
    """Records every request; `forward_to` set: passes it on (non-streamed) and answers."""

    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, Any]]
    forward_to: str | None

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _any(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            model = json.loads(raw).get("model")
        except (ValueError, AttributeError, RecursionError):
            model = None
        self.seen.append((self.command, self.path, model))
        status, data, kind = 200, b'{"pwned": true}', "application/json"
        if self.forward_to is not None:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host",)}
            resp = httpx.post(self.forward_to + self.path, content=raw, headers=headers, timeout=60)
            status, data = resp.status_code, resp.content
            kind = resp.headers.get("content-type", kind)
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    do_POST = do_GET = do_PUT = _any


def _serve(forward_to: str | None) -> tuple[ThreadingHTTPServer, list[tuple[str, str, Any]]]:
    seen: list[tuple[str, str, Any]] = []
    handler = type("H", (_Recorder,), {"seen": seen, "forward_to": forward_to})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


@pytest.fixture
def hosts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """start(script) -> (fake server, what the upstream saw, what the evil host saw): the
    broker's upstream is a recorder in front of the fake server playing `script(evil port)`."""
    made: list[Any] = []

    def start(script: Callable[[int], dict[str, Any]]) -> tuple[FakeModelServer, list, list]:
        evil, evil_seen = _serve(None)
        fake = FakeModelServer(parse_script(script(evil.server_port))).start()
        upstream, upstream_seen = _serve(fake.url)
        made.extend([fake, upstream, evil])
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{upstream.server_port}")
        monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_KEY)
        return fake, upstream_seen, evil_seen

    yield start
    for thing in made:
        if isinstance(thing, FakeModelServer):
            thing.stop()
        else:
            thing.shutdown()
            thing.server_close()


REAL_KEY = "sk-ant-api03-REALKEY-broker-attacks-5512"


def _script(command: str, latency: float = 0.0) -> dict[str, Any]:
    step = {"tool_calls": [{"Bash": {"command": command}}]}
    return {
        "latency": latency,
        "rules": [{"when": MARK, "replies": ["ok"]}],
        "conversations": [conv("(?s)", "Create hello.txt", step, {"text": "done"})],
    }


def _attack(evil_port: int, mode: str) -> str:
    return f"python3 - {evil_port} {mode} <<'EOF'\n{textwrap.dedent(ATTACKER)}\nEOF"


def _eval(capfd, tmp_path: Path, *extra: str, config: str = "") -> tuple[int, str, dict]:
    folder = skill(
        tmp_path,
        {"evals/cases/hello.yaml": "task: Create hello.txt\nchecks: [{file_exists: hello.txt}]\n"},
        config='agent = "claude-code"\n' + config,
    )
    out, model = tmp_path / "run", "anthropic/claude-sonnet-4-6"
    extra = ("--execution-only", "--case", "hello", *extra)
    code, _, err, summary = eval_cli(capfd, folder, out, *extra, model=model)
    return code, err, summary


def _attacks(run: Path, key: str) -> dict[str, Any]:
    events = [json.loads(x) for x in (run / f"transcripts/{key}.jsonl").read_text().splitlines()]
    text = "\n".join(e["text"] for e in events if e["type"] == "tool_result")
    line = next(x for x in text.splitlines() if x.startswith("ATTACKS "))
    result: dict[str, Any] = json.loads(line.removeprefix("ATTACKS "))
    return result


def _exchanges(run: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted((run / "exchanges").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
@pytest.mark.parametrize("channel", CHANNELS)
def test_the_relay_reaches_only_the_providers_own_endpoints(
    hosts, tmp_path: Path, capfd, monkeypatch: pytest.MonkeyPatch, channel: str
) -> None:
    monkeypatch.setenv(CHANNEL_ENV, channel)  # the relay rides the executor channel
    fake, upstream_seen, evil_seen = hosts(lambda evil: _script(_attack(evil, "paths"), 0.3))
    code, err, summary = _eval(capfd, tmp_path, "--parallel", "1")
    assert code == 3, err  # one case: INCONCLUSIVE
    assert "Traceback" not in err  # the nested body is a refusal, not a crash
    seen = _attacks(tmp_path / "run", "hello.baseline.1")
    refused = {
        name: status
        for name, status in seen.items()
        if name not in ("concurrent", "big_length", "big_chunked")
    }
    assert all(isinstance(s, int) and 400 <= s < 500 for s in refused.values()), seen
    assert seen["big_length"] == 413, seen
    # refused before it is read: the 413, or a closed connection while the body is still being
    # sent; either way it reached no upstream (asserted below)
    assert seen["big_chunked"] in (413, "eof"), seen
    assert evil_seen == []  # the real key went nowhere else
    assert {path for _, path, _ in upstream_seen} <= ALLOWED_PATHS, upstream_seen
    assert {model for _, _, model in upstream_seen} == {"claude-sonnet-4-6"}
    # 20 calls at once are carried, a few at a time (the session's concurrency cap)
    assert seen["concurrent"] == [200] * 20
    assert fake.peak_in_flight <= Broker.MAX_CONCURRENT
    assert REAL_KEY not in "".join(str(x) for x in _exchanges(tmp_path / "run"))
    assert summary["rows"][0]["decided_by"] == "checks"


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_twenty_concurrent_calls_cannot_outspend_max_cost(hosts, tmp_path: Path, capfd) -> None:
    _, upstream_seen, evil_seen = hosts(lambda evil: _script(_attack(evil, "costly")))
    # Claude Code's own first call reserves ~$1.07 (an 89 KB body priced at the dearest input
    # rate, an hour's cache write at 2x, its 32k max_tokens as output) and costs ~$0.07; each
    # attack call (200 KB) reserves ~$1.20 and costs ~$0.15 at the Sonnet price: the old
    # broker let all 20 through (~$3.10 spent)
    _, err, summary = _eval(capfd, tmp_path, "--parallel", "1", "--max-cost", "1.5")
    assert "Traceback" not in err
    costly = _attacks(tmp_path / "run", "hello.baseline.1")["costly"]
    forwarded = [m for _, _, m in upstream_seen]
    assert 1 <= costly.count(200) < 20 and len(forwarded) < 21, costly
    assert summary["spend_usd"] <= 1.5
    spent = sum(x.get("cost_usd") or 0.0 for x in _exchanges(tmp_path / "run"))
    assert spent <= 1.5
    assert summary["stopped"] == "spend reached the --max-cost cap $1.50"
    assert evil_seen == []


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_claude_codes_secondary_model_is_allowed_when_configured(
    hosts, tmp_path: Path, capfd
) -> None:
    call = (
        "import json, os, urllib.request as u; b = json.dumps({'model': 'claude-haiku-4-5', "
        f"'max_tokens': 8, 'messages': [{{'role': 'user', 'content': '{MARK}'}}]}}).encode(); "
        "r = u.urlopen(u.Request('http://127.0.0.1:8377/v1/messages', b, "
        "{'content-type': 'application/json', 'x-api-key': os.environ['ANTHROPIC_API_KEY']})); "
        "print('status', r.status)"
    )
    probe = f'echo small=$ANTHROPIC_SMALL_FAST_MODEL haiku=$ANTHROPIC_DEFAULT_HAIKU_MODEL; python3 -c "{call}"'
    hosts(lambda _: _script(probe))
    config = '[agents.claude-code]\nsecondary_model = "anthropic/claude-haiku-4-5"\n'
    code, err, _ = _eval(capfd, tmp_path, "--parallel", "1", config=config)
    assert code == 3, err  # one case: INCONCLUSIVE
    events = (tmp_path / "run/transcripts/hello.baseline.1.jsonl").read_text()
    assert "small=claude-haiku-4-5 haiku=claude-haiku-4-5" in events and "status 200" in events
    rows = [r for r in _exchanges(tmp_path / "run") if r["model"] == "claude-haiku-4-5"]
    assert rows and all(r["status"] == 200 for r in rows)
    usage = rows[0]["usage"]  # priced as Haiku ($1 / $5 a million), not as the run's Sonnet
    assert rows[0]["cost_usd"] == pytest.approx(
        (usage["input_tokens"] + 5 * usage["output_tokens"]) / 1e6
    )


# --- the rules, one by one (no sandbox) ------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "target", "expected"),
    [
        ("anthropic", "/v1/messages", "https://api.example/v1/messages"),
        ("anthropic", "/v1/messages?beta=true", "https://api.example/v1/messages?beta=true"),
        ("anthropic", "/v1/messages/count_tokens", "https://api.example/v1/messages/count_tokens"),
        ("openai", "/v1/responses", "https://api.example/responses"),
        ("openai", "/v1/chat/completions", "https://api.example/chat/completions"),
    ],
)
def test_the_validator_passes_the_wires_own_endpoints(wire: str, target: str, expected: str):
    assert str(upstream_url("https://api.example", route(WIRES[wire], target))) == expected


@pytest.mark.parametrize(
    "target",
    [
        "@evil.example/x",
        "@evil.example/v1/messages",
        "http://evil.example/v1/messages",
        "https://api.anthropic.com@evil.example/v1/messages",
        "//evil.example/v1/messages",
        "/v1/messages/../../x",
        "/v1/../v1/messages",
        "/v1/./messages",
        "/v1/%2e%2e/messages",
        "/v1/messages%2f..%2fbatches",
        "/v1/%6Dessages",
        "/v1/messages%00",
        "/v1/messages\\..",
        "/v1/messages/batches",
        "/v1/batches",
        "/v1/files",
        "/v1/models",
        "/v1/responses",
        "/v1/messages/",
        "/v1//messages",
        "/V1/messages",
        "/v1/messages?",
        "/v1/messages?beta=false",
        "/v1/messages?beta=true&beta=true",
        "/v1/messages?beta=true#x",
        "/v1/messages#@evil.example",
        "*",
        "",
    ],
)
def test_the_validator_refuses_everything_else(target: str) -> None:
    with pytest.raises(Refused) as refused:
        route(WIRES["anthropic"], target)
    assert refused.value.status == 404


@pytest.mark.parametrize(
    "target", ["/v1/messages", "/v1/responses/compact", "/v1/models", "/v1/files", "/responses"]
)
def test_the_openai_validator_passes_only_responses_and_chat(target: str) -> None:
    with pytest.raises(Refused):
        route(WIRES["openai"], target)


def test_the_base_urls_own_path_is_kept_and_nothing_else_joins_it() -> None:
    endpoint = route(WIRES["anthropic"], "/v1/messages?beta=true")
    url = upstream_url("https://gateway.example/anthropic/", endpoint)
    assert str(url) == "https://gateway.example/anthropic/v1/messages?beta=true"


def _headers(raw: bytes) -> Any:
    return http.client.parse_headers(io.BytesIO(raw + b"\r\n"))


def test_a_body_is_refused_at_the_cap_by_its_length_before_it_is_read() -> None:
    body = io.BytesIO(b"x" * 10)
    with pytest.raises(Refused) as refused:
        read_body(body, _headers(b"Content-Length: 2049\r\n"), cap=2048)
    assert refused.value.status == 413 and body.tell() == 0  # not a byte of it read


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_cap() -> None:
    chunk = b"400\r\n" + b"x" * 1024 + b"\r\n"
    body = io.BytesIO(chunk * 4 + b"0\r\n\r\n")
    with pytest.raises(Refused) as refused:
        read_body(body, _headers(b"Transfer-Encoding: chunked\r\n"), cap=2048)
    assert refused.value.status == 413 and body.tell() < 3 * len(chunk)
    ok = io.BytesIO(chunk * 2 + b"0\r\n\r\n")
    assert read_body(ok, _headers(b"Transfer-Encoding: chunked\r\n"), cap=2048) == b"x" * 2048


@pytest.mark.parametrize(
    "headers",
    [
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",  # two framings: smuggling
        b"Content-Length: 5\r\nContent-Length: 6\r\n",
        b"Content-Length: -1\r\n",
        b"Content-Length: 0x10\r\n",
        b"Content-Length: \xd9\xa3\r\n",  # an Arabic-Indic digit is a digit to int()
        b"Transfer-Encoding: gzip, chunked\r\n",
        b"",
    ],
)
def test_a_body_with_an_unclear_length_is_refused(headers: bytes) -> None:
    with pytest.raises(Refused) as refused:
        read_body(io.BytesIO(b"hello"), _headers(headers))
    assert refused.value.status in (400, 411)


@pytest.mark.parametrize(
    "body",
    [b"[" * 100000 + b"]" * 100000, b'{"max_tokens": 5}', b'{"model": 7}', b"not json", b""],
)
def test_a_body_that_is_not_a_model_request_is_refused(body: bytes) -> None:
    with pytest.raises(Refused) as refused:
        read_head(body)
    assert refused.value.status == 400


def test_concurrent_reservations_never_exceed_the_budget() -> None:
    # 20 calls at once, each holding 0.25 of a 1.0 budget and billed 0.125: no more than 4 are
    # ever held together, a call waits for the room the others hold, and once the spend alone
    # leaves none (past 0.75) the rest are refused
    ledger, lock = Ledger(1.0), threading.Lock()
    held, most, granted = [0], [0], []

    def call() -> None:
        ok = ledger.reserve(0.25)
        granted.append(ok)
        if ok:
            with lock:
                held[0] += 1
                most[0] = max(most[0], held[0])
            time.sleep(0.05)
            with lock:
                held[0] -= 1
            ledger.settle(0.25, 0.125)

    threads = [threading.Thread(target=call) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 1 < most[0] <= 4 and granted.count(True) >= 7  # refusing while held: 4
    assert ledger.spent <= 1.0 and ledger.reserved == 0
    assert not ledger.reserve(0.25)  # the spend alone leaves no room: refused at once


def test_a_secondary_model_is_allowed_and_priced_as_itself(tmp_path: Path) -> None:
    fake = FakeModelServer(parse_script({"rules": [{"when": MARK, "replies": ["ok"]}]})).start()
    broker = Broker(
        upstream=fake.url,
        api_key="k",
        model="anthropic/claude-sonnet-4-6",
        secondary="anthropic/claude-haiku-4-5",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    try:
        for model in ("claude-haiku-4-5", "claude-sonnet-4-6", "claude-opus-4-1"):
            _post(broker, {"model": model, "max_tokens": 8, "messages": [_user(MARK)]})
    finally:
        broker.stop()
        fake.stop()
    rows = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert [(r["model"], r["status"]) for r in rows] == [
        ("claude-haiku-4-5", 200),
        ("claude-sonnet-4-6", 200),
        (None, 400),
    ]
    haiku, sonnet = (
        r["cost_usd"] / (r["usage"]["input_tokens"] + 5 * r["usage"]["output_tokens"])
        for r in rows[:2]
    )
    assert haiku == pytest.approx(1.0e-6) and sonnet == pytest.approx(3.0e-6)  # $/token in


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_a_call_with_no_price_is_refused_under_a_budget(tmp_path: Path) -> None:
    # a secondary model the price table does not know: its calls, counted at nothing, would
    # pass every reservation and spend past --max-cost without limit
    fake = FakeModelServer(parse_script({"rules": [{"when": MARK, "replies": ["ok"]}]})).start()
    replies: dict[str, list[tuple[int, str]]] = {}
    try:
        for label, budget in (("capped", 1.0), ("uncapped", None)):
            broker = Broker(
                upstream=fake.url,
                api_key="k",
                model="anthropic/claude-sonnet-4-6",
                secondary="anthropic/claude-opus-4-7",
                exchanges=tmp_path / f"{label}.jsonl",
                budget=budget,
            ).start()
            try:
                replies[label] = [
                    (r.status_code, r.text)
                    for r in (
                        _post(broker, {"model": m, "max_tokens": 8, "messages": [_user(MARK)]})
                        for m in ("claude-opus-4-7", "claude-sonnet-4-6")
                    )
                ]
            finally:
                broker.stop()
    finally:
        fake.stop()
    (unpriced, priced) = replies["capped"]
    assert unpriced[0] == 400 and "no price is known for anthropic/claude-opus-4-7" in unpriced[1]
    assert priced[0] == 200
    assert [status for status, _ in replies["uncapped"]] == [200, 200]  # cost n/a, not capped
    assert len(fake.log()) == 3


def test_a_call_never_sent_is_never_billed(tmp_path: Path) -> None:
    # outside review: a header value our HTTP client refuses to send (NUL, an obs-fold) made
    # the forward fail before the provider had it, and the call was billed its reservation:
    # the sandbox spent the run's --max-cost in a second with no provider call at all
    fake = FakeModelServer(parse_script({"rules": [{"when": MARK, "replies": ["ok"]}]})).start()
    run = RunLedger(5.0)
    broker = Broker(
        upstream=fake.url,
        api_key="k",
        model="anthropic/claude-sonnet-4-5",
        exchanges=tmp_path / "x.jsonl",
        budget=5.0,
        run_ledger=run,
    ).start()
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64000, "messages": [_user(MARK)]}
    try:
        statuses = [
            post_as_relay(
                broker, "/v1/messages", json.dumps(body).encode(), {"user-agent": agent}
            ).status_code
            for agent in ("a\x00b", "a\r\n b", "a\x7fb", "caf\u00e9")
        ]
        # a header name our client refuses (second review): refused, no try of the question
        # spent, so the CLI's own identical call still goes
        named = [
            post_as_relay(
                broker, "/v1/messages", json.dumps(body).encode(), {"x-stainless-a(b)": "1"}
            ).status_code
            for _ in range(3)
        ]
        honest = _post(broker, body)
    finally:
        broker.stop()
        fake.stop()
    assert statuses == [400, 400, 400, 400] and named == [400, 400, 400]
    assert honest.status_code == 200 and len(fake.log()) == 1
    assert broker.fault is None and broker.failures == 0
    assert run.snapshot().spent < 0.01  # the one call that ran, at its billed usage
    # and where a forward does fail in our client, the call is not counted as run
    assert not may_have_run(None, httpx.LocalProtocolError("refused"))
    assert not may_have_run(None, UnicodeEncodeError("ascii", "é", 0, 1, "not ASCII"))


def _post(broker: Broker, body: dict[str, Any]) -> httpx.Response:
    """A call as the session's relay makes it (opening with the broker's preamble)."""
    return post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})


def post_as_relay(
    broker: Broker, target: str, data: bytes, headers: dict[str, str], keyed: bool = True
) -> httpx.Response:
    """POST through the session's relay, as its CLI would: with the session's own key
    (`keyed`), which stands in for whatever key `headers` name."""
    with socket.create_connection(("127.0.0.1", broker.port), timeout=60) as s:
        head = {"host": "127.0.0.1", "content-type": "application/json", **headers}
        if keyed:
            head.update(broker.wire.auth(broker.client_key))
        head["content-length"] = str(len(data))
        lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
        s.sendall(broker.preamble + f"POST {target} HTTP/1.1\r\n{lines}\r\n".encode() + data)
        reply = http.client.HTTPResponse(s)
        try:
            reply.begin()
            return httpx.Response(reply.status, content=reply.read())
        except (OSError, http.client.HTTPException) as exc:  # as httpx would report it
            raise httpx.RemoteProtocolError(repr(exc)) from exc


def test_a_broker_fault_is_one_line_and_an_exchange_never_a_traceback(
    tmp_path: Path, capfd
) -> None:
    # a base URL httpx cannot parse fails inside the broker, not at the provider
    broker = Broker(
        upstream="http://[::1",
        api_key="k",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    try:
        answer = _post(broker, {"model": "claude-sonnet-4-6", "max_tokens": 8, "messages": []})
    finally:
        broker.stop()
    assert answer.status_code == 502 and "skillbench broker" in answer.json()["error"]["message"]
    assert broker.fault is not None and "\n" not in broker.fault
    (row,) = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert row["status"] == 502 and row["error"] == "fault"
    assert "Traceback" not in capfd.readouterr().err


_STARTED = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\nevent: message_start\n"
    b'data: {"type": "message_start", "message": {"usage": {"input_tokens": 9}}}\n\n'
)


def _stalling_upstream(first: bytes, stall: float) -> tuple[socket.socket, threading.Event]:
    """A provider that reads a request, sends `first`, waits `stall` seconds, then ends its
    answer; the event is set once `first` is sent."""
    server = socket.create_server(("127.0.0.1", 0))
    asked = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        conn.recv(65536)
        conn.sendall(first)
        asked.set()
        time.sleep(stall)
        with contextlib.suppress(OSError):
            conn.sendall(b"" if first else b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return server, asked


@pytest.mark.parametrize("first", [b"", _STARTED], ids=["before-its-answer", "mid-stream"])
def test_a_call_in_flight_when_the_arm_ends_is_cancelled_quietly(
    first: bytes, tmp_path: Path, capfd
) -> None:
    upstream, asked = _stalling_upstream(first, 2.0)
    broker = Broker(
        upstream=f"http://127.0.0.1:{upstream.getsockname()[1]}",
        api_key="k",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
    ).start()

    def call() -> None:
        with contextlib.suppress(httpx.HTTPError):  # cut short, however the client sees it
            _post(broker, {"model": "claude-sonnet-4-6", "max_tokens": 8, "messages": []})

    caller = threading.Thread(target=call)
    caller.start()
    assert asked.wait(5)
    time.sleep(0.2)  # (the first bytes reach the broker)
    started = time.monotonic()
    broker.stop()
    caller.join(timeout=5)
    assert time.monotonic() - started < 1.0 and not caller.is_alive()
    time.sleep(2.5)  # the provider ends its answer after the arm is over: nobody is told
    upstream.close()
    (row,) = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert row["status"] == 499 and row["error"] == "cancelled"
    assert row["response"] == first.partition(b"\r\n\r\n")[2].decode()  # what passed
    assert capfd.readouterr().err == ""


def test_codex_has_no_secondary_model_to_configure() -> None:
    with pytest.raises(AgentError, match=r"\[agents.codex\] secondary_model: Codex 0.169.0"):
        make_agent("codex", secondary_model="openai/gpt-5-mini")
    with pytest.raises(AgentError, match="secondary_model"):
        make_agent("claude-code", secondary_model="openai/gpt-5-mini")


@pytest.mark.parametrize("depth", [500, 900])
def test_a_deeply_nested_request_is_forwarded_and_recorded(depth: int, tmp_path: Path) -> None:
    fake = FakeModelServer(parse_script({"rules": [{"when": MARK, "replies": ["ok"]}]})).start()
    broker = Broker(
        upstream=fake.url,
        api_key="k",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
    ).start()
    nested: Any = []
    for _ in range(depth):
        nested = [nested]
    body = {"model": "claude-sonnet-4-6", "max_tokens": 8, "messages": [_user(MARK)], "x": nested}
    try:
        answer = _post(broker, body)
    finally:
        broker.stop()
        fake.stop()
    assert answer.status_code == 200 and broker.fault is None
    (row,) = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert row["status"] == 200 and MARK in str(row["request"])


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85"])
def test_a_line_separator_in_the_models_text_does_not_hide_a_calls_usage(sep: str) -> None:
    # JSON leaves these raw inside a string; str.splitlines() ended an SSE line there, the
    # event carrying the usage no longer parsed, and the call was counted as free
    text = f"you said{sep}ok"
    openai = json.dumps(
        {
            "type": "response.completed",
            "response": {
                "output": [{"type": "message", "content": [{"text": text}]}],
                "usage": {"input_tokens": 1000, "output_tokens": 500},
            },
        },
        ensure_ascii=False,
    )
    usage = WIRES["openai"].usage(f"event: response.completed\ndata: {openai}\n\n")
    assert (usage.input_tokens, usage.output_tokens) == (1000, 500)
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 1000}}}
    delta = {"type": "message_delta", "delta": {"text": text}, "usage": {"output_tokens": 500}}
    stream = "".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\r\n\r\n"
        for e in (start, delta)
    )
    usage = WIRES["anthropic"].usage(stream)
    assert (usage.input_tokens, usage.output_tokens) == (1000, 500)
