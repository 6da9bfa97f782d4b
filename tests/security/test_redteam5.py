"""redteam5: variants of the last round's fixed attacks that hold (each would have been a
finding had it worked); the ones that broke are reproducers under attacks/redteam5/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillbench.config import load_settings
from tests.agents.test_activation_spellings import loaded


@pytest.mark.parametrize("agent", ["builtin", "claude-code"])
@pytest.mark.parametrize(
    "how",
    [
        "source {home}/pdf/SKILL.md",
        ". {home}/pdf/SKILL.md",
        "sh <<EOF\ncat {home}/pdf/SKILL.md\nEOF",
        "python3 -c \"print(open('{home}/pdf/SKILL.md').read())\"",
        "head -50 {home}/pdf/SKILL.md",
        "pushd {home} >/dev/null; cat pdf/SKILL.md",
        "builtin cd {home}/pdf && cat SKILL.md",
        "command cat {home}/pdf/SKILL.md",
        "ln -s {home}/pdf /tmp/x; cat /tmp/x/SKILL.md",
        "a=pd; cat {home}/${{a}}f/SKILL.md",
        "D={home}/pdf; cd $D; cat SKILL.md",
        "(cd {home}/pdf && cat SKILL.md)",
        "cd\t{home}/pdf;cat\tSKILL.md",
        'cat {home}/p""df/SKILL.md',
        "cat < {home}/pdf/SKILL.md",
    ],
)
def test_more_spellings_of_a_read_are_a_load(agent: str, how: str) -> None:
    assert loaded(agent, how) == {"pdf"}


def _skill(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {folder.name}\ndescription: X.\n---\n")


EVIL = '[cluster]\naddress = "ray://evil.example:10001"\n'


def test_a_project_link_to_a_downloaded_skill_does_not_read_the_packs_config(
    tmp_path: Path,
) -> None:
    _skill(tmp_path / "pack/skills/foo")
    (tmp_path / "pack/skillbench.toml").write_text(EVIL)
    (tmp_path / "proj/skills").mkdir(parents=True)
    (tmp_path / "proj/skills/foo").symlink_to(tmp_path / "pack/skills/foo")
    os.chdir(tmp_path / "proj")
    loaded = load_settings(Path("skills/foo"))
    assert loaded.path is None and loaded.settings.cluster.address is None


def test_dotdot_in_the_skill_path_does_not_reach_the_packs_config(tmp_path: Path) -> None:
    _skill(tmp_path / "pack/skills/foo")
    (tmp_path / "pack/skillbench.toml").write_text(EVIL)
    (tmp_path / "proj").mkdir()
    os.chdir(tmp_path / "proj")
    loaded = load_settings(Path("../pack/skills/x/../foo/"))
    assert loaded.path is None


def test_skillbench_env_vars_other_than_model_set_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _skill(tmp_path / "foo")
    monkeypatch.setenv("SKILLBENCH_CLUSTER", "ray://evil.example:1")
    monkeypatch.setenv("SKILLBENCH_PRICES", "{}")
    monkeypatch.setenv("SKILLBENCH_GATE", "require-signed=false")
    loaded = load_settings(tmp_path / "foo")
    assert loaded.settings.cluster.address is None
    assert set(loaded.sources.values()) <= {"default", "default (same as model)"}


@pytest.mark.parametrize(
    "name",
    [
        "HEAD",
        "FETCH_HEAD",
        "origin/main^{}",
        "main~0",
        "@",
        "main@{0}",
        "main:",
        "refs/heads/../tags/x",
    ],
)
def test_a_base_that_is_not_a_branch_is_refused(tmp_path: Path, capsys, name: str) -> None:
    from skillbench.cli import main
    from tests.team.test_gate_trusted_ref import attacked_clone

    _, work = attacked_clone(tmp_path, capsys)
    os.chdir(work)
    capsys.readouterr()
    code = main(["gate", "skills/greeter/v1", "--team", ".", "--base", name])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.err.startswith("skillbench: error: --base "), captured.err


def test_a_branch_named_like_the_bases_commit_prefix_is_ambiguous(tmp_path: Path, capsys) -> None:
    from skillbench.cli import main
    from tests.security.test_receipt_trust import git
    from tests.team.test_gate_trusted_ref import attacked_clone

    origin, _ = attacked_clone(tmp_path, capsys)
    tip = git(origin, "rev-parse", "refs/heads/main").strip()
    git(origin, "branch", tip[:10], "pr")
    capsys.readouterr()
    code = main(
        ["gate", str(origin / "skills/greeter/v1"), "--team", str(origin), "--base", tip[:10]]
    )
    assert code == 2
    assert "is ambiguous" in capsys.readouterr().err


@pytest.mark.parametrize(
    "request_",
    [
        "GET http://{a}/ HTTP/1.0\r\nHost: internal.example\r\n\r\n",
        "GET http://{a}/ HTTP/1.1\r\nHost: {a}\r\nHost: internal.example\r\n\r\n",
        "GET http://{a}/ HTTP/1.1\r\nhost :internal.example\r\n\r\n",
        "GET http://{a}@internal.example/ HTTP/1.1\r\nHost: {a}\r\n\r\n",
        "GET http://internal.example#@{a}/ HTTP/1.1\r\nHost: {a}\r\n\r\n",
        "POST http://{a}/ HTTP/1.1\r\nHost: {a}\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
        "0\r\n\r\nGET / HTTP/1.1\r\nHost: internal.example\r\n\r\n",
        "POST http://{a}/ HTTP/1.1\r\nHost: {a}\r\nTransfer-Encoding: xchunked\r\n\r\n"
        "0\r\n\r\nGET / HTTP/1.1\r\nHost: internal.example\r\n\r\n",
        "POST http://{a}/ HTTP/1.1\r\nHost: {a}\r\nContent-Length: +0\r\n\r\n"
        "GET / HTTP/1.1\r\nHost: internal.example\r\n\r\n",
        "POST http://{a}/ HTTP/1.1\r\nHost: {a}\r\nTransfer-Encoding: chunked\r\n\r\n"
        "0x0\r\n\r\nGET / HTTP/1.1\r\nHost: internal.example\r\n\r\n",
        "POST http://{a}/ HTTP/1.1\r\nHost: {a}\r\nTransfer-Encoding: chunked\r\n\r\n"
        "1\r\nAB\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: internal.example\r\n\r\n",
        "CONNECT {a} HTTP/1.1\r\nHost: {a}\r\n\r\nGET / HTTP/1.0\r\nHost: internal.example\r\n\r\n",
        "CONNECT {a} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: {a}\r\nContent-Length: 37\r\n\r\n"
        "GET / HTTP/1.1\r\nHost: internal.example\r\n\r\nGET / HTTP/1.1\r\nHost: internal.example\r\n\r\n",
        "GET http://{a}/ HTTP/1.1\r\nHost: {a}\r\n\r\nGET http://{a}/ HTTP/1.1\r\nHost: internal.example\r\n\r\n",
    ],
)
def test_egress_variants_never_reach_another_site(tmp_path: Path, request_: str) -> None:
    from skillbench.sandbox.egress import EgressProxy
    from tests.sandbox.test_egress_one_request import _talk, _vhost_server

    up, port, seen = _vhost_server(honour_close=False)
    a = f"127.0.0.1:{port}"
    proxy = EgressProxy([a], tmp_path / "net.jsonl", "agent").start()
    try:
        out = _talk(proxy.port, request_.format(a=a).encode())
    finally:
        proxy.stop()
        up.close()
    assert b"site internal.example" not in out, out
    assert all(h == a.encode() for h, _ in seen), seen


def _sse(event: str, obj: dict) -> str:
    import json

    return f"event: {event}\ndata: {json.dumps(obj)}\n\n"


@pytest.mark.parametrize(
    ("wire", "model", "text"),
    [
        # Anthropic: cut after message_start (its usage is a first count, inside `message`),
        # and a delta whose text spells a usage object and message_stop
        (
            "anthropic",
            "anthropic/claude-sonnet-4-5",
            _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {"usage": {"input_tokens": 10, "output_tokens": 1}},
                },
            )
            + _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "delta": {
                        "type": "text_delta",
                        "text": '\n\ndata: {"usage": {"input_tokens": 1, "output_tokens": 1}}\n\n'
                        "event: message_stop\n",
                    },
                },
            ),
        ),
        # Responses: created and in_progress carry `usage: null`
        (
            "openai",
            "openai/gpt-5",
            _sse("response.created", {"type": "response.created", "response": {"usage": None}})
            + _sse("response.in_progress", {"response": {"usage": None}}),
        ),
        # Chat Completions with include_usage: every chunk but the last says `usage: null`
        (
            "openai",
            "openai/gpt-5",
            "data: " + '{"choices": [{"index": 0, "delta": {"content": "hi"}}], "usage": null}\n\n',
        ),
    ],
    ids=["anthropic-after-start", "responses-created", "chat-null-usage"],
)
def test_a_cut_stream_without_its_final_usage_is_billed_its_reservation(
    wire: str, model: str, text: str
) -> None:
    from skillbench.broker.billing import bill
    from skillbench.broker.wire import WIRES

    billed = bill(WIRES[wire], text, model, 2.5, None, ran=True)
    assert not billed.whole
    assert billed.cost == 2.5


def test_a_duplicated_output_cap_is_refused() -> None:
    from skillbench.broker.limits import Refused, read_head

    with pytest.raises(Refused, match="given twice"):
        read_head(b'{"model": "m", "max_tokens": 1, "max_tokens": 64000}')


def test_a_4xx_is_not_billed_as_run_and_a_2xx_or_a_dropped_answer_is() -> None:
    import httpx

    from skillbench.broker.billing import may_have_run

    assert not may_have_run(400, None) and not may_have_run(429, None)
    assert may_have_run(200, None) and may_have_run(None, httpx.ReadTimeout("t"))
    assert may_have_run(None, httpx.RemoteProtocolError("cut"))
    assert not may_have_run(None, httpx.ConnectError("no"))


def test_the_canary_is_fresh_per_call_and_not_derived_from_the_expectations() -> None:
    from skillbench.grading.expect import canary_text, numbered

    texts = ["The report exists", "The report has a title"]
    canaries = {canary_text() for _ in range(50)}
    assert len(canaries) == 50
    for canary in canaries:
        assert canary.startswith("The workspace contains a file named ")
        assert canary.endswith(".canary") and len(canary.split()[-1]) == 24 + len(".canary")
    # its position is fixed by the expectations alone (scripted graders), its name is not
    place = {[t for _, t in numbered(texts, c)].index(c) for c in canaries}
    assert len(place) == 1


def test_the_call_cap_refuses_a_third_whole_call(tmp_path: Path) -> None:
    """The control for attacks/redteam5/test_broker_cap_hangup.py: calls read to their end
    count against max_requests."""
    import json
    import socket
    import threading
    from http.server import ThreadingHTTPServer

    from skillbench.broker.server import Broker
    from tests.security.test_broker_billing_attacks import _Generating

    server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Generating,), {"generated": []}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    broker = Broker(
        upstream=f"http://127.0.0.1:{server.server_port}",
        api_key="sk-real",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
        budget=50.0,
        max_requests=2,
    ).start()
    body = json.dumps(
        {"model": "claude-sonnet-4-6", "max_tokens": 800, "stream": True, "messages": []}
    ).encode()
    answers = []
    try:
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
                s.sendall(
                    broker.preamble + b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n"
                    b"content-type: application/json\r\n"
                    + f"x-api-key: {broker.client_key}\r\n".encode()
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                seen = b""
                while more := s.recv(65536):
                    seen += more
                answers.append(seen)
    finally:
        broker.stop()
        server.shutdown()
        server.server_close()
    assert b"message_stop" in answers[0] and b"message_stop" in answers[1]
    assert b"cap of 2 model calls is reached" in answers[2]


def test_a_downloaded_library_run_from_elsewhere_supplies_no_settings(tmp_path: Path) -> None:
    _skill(tmp_path / "dl/lib/foo")
    _skill(tmp_path / "dl/lib/bar")
    (tmp_path / "dl/lib/skillbench.toml").write_text(EVIL)
    (tmp_path / "dl/pyproject.toml").write_text(f"[tool.skillbench]\n{EVIL}")
    (tmp_path / "proj").mkdir()
    os.chdir(tmp_path / "proj")
    for start in ("../dl/lib", "../dl/lib/foo/.."):
        loaded = load_settings(Path(start))
        assert loaded.path is None and loaded.settings.cluster.address is None


def test_h2_prior_knowledge_in_a_tunnel_is_cut_after_its_preface(tmp_path: Path) -> None:
    from skillbench.sandbox.egress import EgressProxy
    from tests.sandbox.test_egress_one_request import _talk, _vhost_server

    up, port, seen = _vhost_server(honour_close=False)
    a = f"127.0.0.1:{port}"
    proxy = EgressProxy([a], tmp_path / "net.jsonl", "agent").start()
    try:
        _talk(
            proxy.port,
            f"CONNECT {a} HTTP/1.1\r\n\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".encode()
            + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # a SETTINGS frame, then anything
            + b"GET / HTTP/1.1\r\nHost: internal.example\r\n\r\n",
        )
    finally:
        proxy.stop()
        up.close()
    assert all(h != b"internal.example" for h, _ in seen), seen


def test_a_close_delimited_answer_cut_before_its_usage_is_billed_its_reservation(
    tmp_path: Path,
) -> None:
    """An HTTP/1.0 upstream answers without a Content-Length and closes mid-body: nothing
    tells the broker the body was cut but the missing usage, which bills the reservation."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from skillbench.broker.server import Broker
    from tests.security.test_broker_attacks import post_as_relay

    class Cut(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"id": "m", "type": "message", "content": [{"type": "text", ')

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Cut)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    broker = Broker(
        upstream=f"http://127.0.0.1:{server.server_port}",
        api_key="sk-real",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
        budget=5.0,
    ).start()
    body = {"model": "claude-sonnet-4-6", "max_tokens": 4000, "messages": []}
    try:
        post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
    finally:
        broker.stop()
        server.shutdown()
        server.server_close()
    (row,) = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert "reservation" in row["billed"]
    assert broker.ledger.spent > 0.05  # 4000 output tokens at $15/Mtok
