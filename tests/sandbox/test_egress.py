"""Network per phase (docs/formats.md, issue 23 part 3), offline against real podman: a local HTTP
server on the host stands in for the internet. Through the egress proxy a listed host:port
answers from inside the sandbox, every other target is refused 403 and recorded; a phase with
`network: none` has no proxy, no relay and reaches nothing; a verifier-only allowlist lets the
checks fetch while the agent cannot."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from skillbench.evals.cases import load_case
from skillbench.evals.network import Network, parse_entry
from skillbench.evals.services import Service
from skillbench.importers.harbor import INTERNET, import_harbor
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.egress import PROXY_PORT, phase_proxy
from skillbench.sandbox.podman.provider import PodmanProvider
from tests.helpers import BASE, CAND, bash, conv, make_skill, run_eval, skill, write

# A GET of $1 with python's urllib (which reads HTTP_PROXY): prints the body, or the error.
FETCH = (
    "import sys, urllib.request\n"
    "try:\n"
    "    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())\n"
    "except Exception as exc:\n"
    "    print('FAILED', exc)\n"
)


class _Internet(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello from {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def internet() -> Iterator[int]:
    """The port of an HTTP server on the host's 127.0.0.1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Internet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def _lines(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_entries_parse_as_documented() -> None:
    assert parse_entry("PyPI.org").ports == (80, 443)
    assert parse_entry("127.0.0.1:8080").ports == (8080,)
    assert parse_entry("[::1]:80").host == "::1"
    for bad in ("http://pypi.org", "*.pypi.org", "a:0", "[::1"):
        with pytest.raises(ValueError):
            parse_entry(bad)


def test_harbor_allow_internet_becomes_the_package_index_allowlist(tmp_path: Path) -> None:
    task = write(
        tmp_path / "task",
        {
            "task.toml": "[environment]\nallow_internet = true\n",
            "instruction.md": "Write out.txt\n",
            "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
        },
    )
    imported = import_harbor(task)
    assert any(
        "allow_internet — mapped to `network: [deb.debian.org" in n for n in imported.unmapped
    )
    folder = make_skill(tmp_path, "s")
    for new in imported.files:
        write(folder / "evals", {new.rel: new.content})
    case, _ = load_case(folder / "evals/cases/task.yaml", folder)
    assert case.network == Network(INTERNET, INTERNET)


@pytest.mark.sandbox
@pytest.mark.anyio
async def test_a_listed_host_answers_and_every_other_target_is_refused(
    provider: PodmanProvider, spec: SandboxSpec, internet: int, tmp_path: Path
) -> None:
    log = tmp_path / "network" / "case.candidate.1.jsonl"
    async with phase_proxy(spec, [f"127.0.0.1:{internet}"], log, "agent") as box_spec:
        box = await provider.create(box_spec)
        try:
            await box.write_file("fetch.py", FETCH)
            ok = await box.exec(["python3", "fetch.py", f"http://127.0.0.1:{internet}/pkg"])
            assert ok.stdout.strip() == "hello from /pkg", ok
            # HTTPS goes by CONNECT: a tunnel to the same listed host:port
            tunnel = await box.exec(
                [
                    "python3",
                    "-c",
                    "import http.client as h; c = h.HTTPConnection('127.0.0.1', "
                    f"{PROXY_PORT}); c.set_tunnel('127.0.0.1', {internet}); "
                    "c.request('GET', '/tls'); print(c.getresponse().read().decode())",
                ]
            )
            assert tunnel.stdout.strip() == "hello from /tls", tunnel
            other_port = await box.exec(
                ["python3", "fetch.py", f"http://127.0.0.1:{internet + 1}/"]
            )
            other_host = await box.exec(["python3", "fetch.py", f"http://localhost.:{internet}/"])
            named = await box.exec(["python3", "fetch.py", "http://example.com/"])
            for refused in (other_port, other_host, named):
                assert "FAILED HTTP Error 403" in refused.stdout, refused
        finally:
            await box.close()
    seen = _lines(log)
    allowed = [(e["method"], e["port"]) for e in seen if e["allowed"]]
    assert sorted(allowed) == [("CONNECT", internet), ("GET", internet)]
    refused = {(e["host"], e["port"]) for e in seen if not e["allowed"]}
    assert refused == {
        ("127.0.0.1", internet + 1),
        ("localhost", internet),
        ("example.com", 80),
    }
    assert all(e["phase"] == "agent" for e in seen)
    assert all(e["received"] > 0 for e in seen if e["allowed"])


@pytest.mark.sandbox
@pytest.mark.anyio
async def test_a_phase_with_network_none_reaches_nothing(
    provider: PodmanProvider, spec: SandboxSpec, internet: int, tmp_path: Path
) -> None:
    log = tmp_path / "network.jsonl"
    async with phase_proxy(spec, (), log, "agent") as box_spec:
        assert box_spec is spec  # no relay, no proxy variables
        box = await provider.create(box_spec)
        try:
            await box.write_file("fetch.py", FETCH)
            env = await box.exec("env | grep -i _proxy || true")
            assert env.stdout == ""
            for url in (f"http://127.0.0.1:{internet}/", f"http://127.0.0.1:{PROXY_PORT}/"):
                direct = await box.exec(["python3", "fetch.py", url])
                assert direct.stdout.startswith("FAILED"), direct
            # even told to use the proxy's address, nothing listens there
            forced = await box.exec(
                ["python3", "fetch.py", f"http://127.0.0.1:{internet}/"],
                env={"HTTP_PROXY": f"http://127.0.0.1:{PROXY_PORT}"},
            )
            assert "Connection refused" in forced.stdout, forced
        finally:
            await box.close()
    assert not log.exists()


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_verifier_only_allowlist_lets_the_checks_fetch_but_not_the_agent(
    fake, internet: int, tmp_path: Path, capsys
) -> None:
    url = f"http://127.0.0.1:{internet}/answer"
    folder = skill(
        tmp_path,
        {
            "evals/fetch.py": FETCH,
            "evals/cases/net.yaml": (
                "task: Task net\n"
                f"network:\n  agent: none\n  verifier: ['127.0.0.1:{internet}']\n"
                "checks:\n"
                "  - command_succeeds: grep -q FAILED agent.txt\n"
                f"  - command_succeeds: python3 $CASE/fetch.py {url} | grep -q 'hello from'\n"
            ),
        },
    )
    agent_fetch = f"python3 -c \"$(cat <<'EOF'\n{FETCH}EOF\n)\" {url} > agent.txt"
    fake(
        {
            "conversations": [
                conv(CAND, "Task net", bash(agent_fetch), {"text": "done"}),
                conv(BASE, "Task net", bash(agent_fetch), {"text": "done"}),
            ]
        }
    )
    out = tmp_path / "run"
    _, lines, _ = run_eval(capsys, folder, out, "--execution-only")
    journal = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    sessions = [j for j in journal if j["type"] == "session"]
    # in both arms: the agent's fetch failed (no proxy), and the checks' own fetch passed
    assert sorted(s["arm"] for s in sessions) == ["baseline", "candidate"], lines
    for s in sessions:
        assert s["outcome"] == "pass", s
    logs = sorted((out / "network").glob("*.jsonl"))
    assert [p.name for p in logs] == ["net.baseline.1.jsonl", "net.candidate.1.jsonl"]
    for log in logs:  # the verifier's one connection, and none from the agent phase
        seen = [(e["phase"], e["allowed"], e["port"]) for e in _lines(log)]
        assert seen == [("verifier", True, internet)]


def _through_proxy(port: int, url: str) -> str:
    """The status line the proxy at host port `port` answers a plain-HTTP GET of `url` with."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        host = url.split("/")[2]  # the site asked for is the URL's (another one is refused)
        sock.sendall(f"GET {url} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        return sock.makefile("rb").readline().decode().strip()


@pytest.mark.anyio
async def test_the_proxy_refuses_a_service_name_even_where_the_host_resolves_it(
    internet: int, tmp_path: Path
) -> None:
    # Attack: the case's service is named so that the host resolves it (here to its own
    # loopback, where a host-side listener waits) and the allowlist names it too. Inside, the
    # name is the service in the arm's pod; through the proxy it must not become the host's.
    numeric = "2130706433"  # glibc resolves this name to 127.0.0.1 on any host
    spec = SandboxSpec(image="unused", services=(Service(name=numeric),))
    allowed = [f"{numeric}:{internet}", f"127.0.0.1:{internet}"]
    log = tmp_path / "net.jsonl"
    async with phase_proxy(spec, allowed, log, "verifier") as box_spec:
        assert box_spec.egress is not None
        status = _through_proxy(box_spec.egress.target, f"http://{numeric}:{internet}/")
        assert status.startswith("HTTP/1.1 403"), status
        # the listed address itself still answers: only the service's name is refused
        ok = _through_proxy(box_spec.egress.target, f"http://127.0.0.1:{internet}/")
        assert ok.endswith(" 200 OK"), ok
        assert numeric in box_spec.env["NO_PROXY"].split(",")
    (refused,) = [e for e in _lines(log) if not e["allowed"]]
    assert refused["host"] == numeric and "one of the case's services" in refused["reason"]


def test_check_reports_an_allowlist_entry_that_names_a_service(tmp_path: Path, capsys) -> None:
    from skillbench.cli import main

    folder = make_skill(
        tmp_path,
        "s",
        {
            "evals/cases/c.yaml": (
                "task: t\nservices:\n  db:\n    command: [sleep, infinity]\n"
                "network:\n  verifier: [pypi.org, 'db:5432']\n"
                "checks:\n  - file_exists: x\n"
            )
        },
    )
    assert main(["check", str(folder)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"{folder}/evals/cases/c.yaml:6: error: `network` entry 'db:5432' names the case's "
        "service `db`: services are reached directly in the arm's pod, never through the "
        "egress proxy; remove the entry"
    ), out


@pytest.mark.sandbox
@pytest.mark.anyio
async def test_services_are_reached_directly_while_the_proxy_serves_the_allowlist(
    provider: PodmanProvider, internet: int, tmp_path: Path
) -> None:
    from skillbench.evals.model import Case
    from skillbench.sandbox.podman.image import IMAGE
    from skillbench.sandbox.stage import stage_arm

    serve = "mkdir -p /tmp/s && echo 42 > /tmp/s/answer && cd /tmp/s && exec python3 -m http.server 8000"
    svc = Service(
        name="svc",
        command=("sh", "-c", serve),
        healthcheck=(
            "python3",
            "-c",
            "import urllib.request as u; u.urlopen('http://localhost:8000/')",
        ),
    )
    spec = SandboxSpec(image=IMAGE, services=(svc,))
    log = tmp_path / "net.jsonl"
    async with phase_proxy(spec, [f"127.0.0.1:{internet}"], log, "agent") as box_spec:
        staged = await stage_arm(provider, box_spec, Case(name="c", path="c.yaml", task="t"), {})
        try:
            box = staged.sandbox
            await box.write_file("fetch.py", FETCH)
            env = await box.exec("echo $NO_PROXY; echo $no_proxy")
            for line in env.stdout.split():
                assert {"localhost", "svc"} <= set(line.split(",")), env
            service = await box.exec(["python3", "fetch.py", "http://svc:8000/answer"])
            assert service.stdout.strip() == "42", service
            outside = await box.exec(["python3", "fetch.py", f"http://127.0.0.1:{internet}/x"])
            assert outside.stdout.strip() == "hello from /x", outside
        finally:
            await staged.close()
    # the service never went through the proxy; the listed host did
    assert [(e["host"], e["allowed"]) for e in _lines(log)] == [("127.0.0.1", True)]


def _hello(name: str) -> bytes:
    """The ClientHello a TLS client sends for `name` (its SNI), from Python's own ssl."""
    import ssl

    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def _ask(port: int, data: bytes) -> bytes:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(data)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
        return reply


def test_the_proxy_matches_the_host_asked_for_not_only_the_address(tmp_path: Path) -> None:
    """An allowed address asked for another site — by the Host header of a plain request, or by
    the SNI of the TLS inside a CONNECT — is refused, and the log names the site asked for."""
    import socket

    from skillbench.sandbox.egress import EgressProxy

    upstream = socket.create_server(("127.0.0.1", 0))
    port = upstream.getsockname()[1]
    got: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = upstream.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    if data := conn.recv(65536):
                        got.append(data)
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    log = tmp_path / "net.jsonl"
    proxy = EgressProxy([f"127.0.0.1:{port}"], log, "agent").start()
    try:
        url = f"http://127.0.0.1:{port}/x"
        plain = _ask(
            proxy.port, f"GET {url} HTTP/1.1\r\nHost: not-allowed.example\r\n\r\n".encode()
        )
        assert plain.startswith(b"HTTP/1.1 403"), plain
        twice = f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: not-allowed.example\r\n\r\n"
        assert _ask(proxy.port, twice.encode()).startswith(b"HTTP/1.1 403")
        tls = _ask(
            proxy.port,
            f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode() + _hello("not-allowed.example"),
        )
        assert b"hi" not in tls and got == [], got
        # the listed site padded with whitespace other than spaces and tabs (NBSP, NEL, a
        # form feed): compared stripped, it was forwarded raw, another name upstream
        for pad in ("\xa0", "\x85", "\x0c", "\x1f"):
            padded = f"GET {url} HTTP/1.1\r\nHost: {pad}127.0.0.1:{port}{pad}\r\n\r\n"
            assert _ask(proxy.port, padded.encode("latin-1")).startswith(b"HTTP/1.1 400")
        named = f"GET {url} HTTP/1.1\r\n\x0bHost: 127.0.0.1:{port}\r\n\r\n"
        assert _ask(proxy.port, named.encode("latin-1")).startswith(b"HTTP/1.1 400")
        assert got == [], got
        # the same requests for the host that is listed go through
        ok = _ask(proxy.port, f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        assert ok.endswith(b"hi"), ok
        for _ in range(200):  # each line is written as its connection closes
            if len(_lines(log)) == 9:
                break
            time.sleep(0.05)
    finally:
        proxy.stop()
        upstream.close()
    lines = _lines(log)
    # a line is written once its connection is closed, so two may land in either order
    asked = sorted((x["allowed"], x["method"], x.get("asked") or "") for x in lines)
    assert asked[0] == (False, "CONNECT", "not-allowed.example"), lines
    assert asked[1:7] == [(False, "GET", "")] * 6, lines  # the padded six: asked nothing
    assert asked[7] == (False, "GET", "not-allowed.example"), lines
    assert asked[8][:2] == (True, "GET"), lines
