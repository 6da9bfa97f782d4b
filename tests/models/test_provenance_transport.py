"""G11 (issue 38): a run whose model calls went through a proxy, or trusted a CA other than the
system's, is not the provider's own, whatever its base URL says (docs/trust.md).

On 2bba125 a loopback stub reached through HTTPS_PROXY + SSL_CERT_FILE was recorded as
`https://api.anthropic.com, provider: true` and passed the gate's default endpoint policy.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import certifi
import pytest

from skillbench.cli import main
from skillbench.models import Endpoint, endpoint
from skillbench.models.transport import CA_VARS
from tests.helpers import BASE, CAND, MODEL, conv, write_file
from tests.security.test_gate_trust_attacks import forged
from tests.security.test_receipt_trust import (
    commit,
    gate,
    git_identity,  # noqa: F401  (autouse fixture)
    greeter,
    publish,
    team_repo,
)

PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")
ANTHROPIC = "https://api.anthropic.com"


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy and the system's trust store, whatever the machine running the tests sets."""
    for name in (*PROXY_VARS, *CA_VARS, "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@pytest.mark.parametrize("name", ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"])
def test_a_proxy_is_recorded_and_is_not_the_provider(direct: pytest.MonkeyPatch, name: str) -> None:
    direct.setenv(name, "http://user:secret@127.0.0.1:3128/")
    assert endpoint("anthropic/claude-sonnet-4-6") == Endpoint(
        ANTHROPIC, provider=False, proxy="http://127.0.0.1:3128"
    )
    # HTTP_PROXY is for http:// URLs only, as every client reads it
    direct.delenv(name)
    direct.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    assert endpoint("anthropic/claude-sonnet-4-6") == Endpoint(ANTHROPIC, provider=True)
    direct.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080")
    assert endpoint("anthropic/claude-sonnet-4-6").proxy == "http://127.0.0.1:3128"


def test_no_proxy_hides_a_proxy_only_where_every_client_agrees(
    direct: pytest.MonkeyPatch,
) -> None:
    direct.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    direct.setenv("NO_PROXY", "example.com, API.anthropic.com")
    assert endpoint("anthropic/claude-sonnet-4-6").proxy is None
    direct.setenv("NO_PROXY", "*")
    assert endpoint("anthropic/claude-sonnet-4-6").proxy is None
    # a suffix form some clients honour and others do not: the proxy may have been used
    direct.setenv("NO_PROXY", ".anthropic.com")
    assert endpoint("anthropic/claude-sonnet-4-6").proxy == "http://127.0.0.1:3128"


def test_a_custom_ca_is_recorded_but_the_system_store_is_not(
    direct: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # what this machine (and many CI images) set: the system bundle, certifi's, a copy of one
    copy = tmp_path / "copy-of-certifi.pem"
    shutil.copyfile(certifi.where(), copy)
    direct.setenv("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
    direct.setenv("SSL_CERT_DIR", "/etc/ssl/certs")
    direct.setenv("REQUESTS_CA_BUNDLE", certifi.where())
    direct.setenv("CURL_CA_BUNDLE", str(copy))
    direct.setenv("NODE_EXTRA_CA_CERTS", ssl.get_default_verify_paths().openssl_cafile)
    assert endpoint("anthropic/claude-sonnet-4-6") == Endpoint(ANTHROPIC, provider=True)
    stub_ca = tmp_path / "stub-ca.pem"
    stub_ca.write_bytes(copy.read_bytes() + b"\n")  # one byte more than a default bundle
    direct.setenv("SSL_CERT_FILE", str(stub_ca))
    direct.setenv("SSL_CERT_DIR", str(tmp_path))
    assert endpoint("openai/gpt-5") == Endpoint(
        "https://api.openai.com", provider=False, ca=["SSL_CERT_FILE", "SSL_CERT_DIR"]
    )


def _receipt_reaching(skill: Path, agent: dict) -> dict:
    body = forged(skill)
    body["provenance"]["endpoints"]["agent"] = agent
    return body


def test_the_gate_counts_a_proxy_as_an_endpoint(direct, tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    assert publish(capsys, skill, repo)[0] == 0
    proxied = {"url": ANTHROPIC, "provider": False, "proxy": "http://127.0.0.1:3128"}
    commit(repo, "evals/greeter/v1/forged.json", _receipt_reaching(skill, proxied))
    code, said = gate(capsys, skill, repo)
    assert code == 1 and said.startswith(
        "gate refused: greeter: the newest measured receipt (run forged) reached its agent "
        "model at https://api.anthropic.com through the proxy http://127.0.0.1:3128, not an "
        "allowed endpoint"
    ), said
    # a team behind its own proxy lists it
    allowed = ("--allow-endpoint", ANTHROPIC, "--allow-endpoint", "http://127.0.0.1:3128")
    assert gate(capsys, skill, repo, *allowed)[0] == 0


def test_the_gate_refuses_a_custom_ca_unless_the_policy_accepts_it(
    direct, tmp_path: Path, capsys
) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    assert publish(capsys, skill, repo)[0] == 0
    trusting = {"url": ANTHROPIC, "provider": False, "ca": ["SSL_CERT_FILE"]}
    commit(repo, "evals/greeter/v1/forged.json", _receipt_reaching(skill, trusting))
    code, said = gate(capsys, skill, repo)
    assert (code, said) == (
        1,
        "gate refused: greeter: the newest measured receipt (run forged) reached its agent "
        "model (SSL_CERT_FILE) trusting a custom CA, under which any server can answer as the "
        "provider; set allow-custom-ca = true (--allow-custom-ca) to accept it",
    )
    assert gate(capsys, skill, repo, "--allow-custom-ca")[0] == 0
    commit(repo, "pyproject.toml", "[tool.skillbench.gate]\nallow-custom-ca = true\n")
    assert gate(capsys, skill, repo)[0] == 0


# --- end to end: the red team's stub, through a real eval ----------------------------------


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _stub_ca(tmp_path: Path) -> tuple[Path, ssl.SSLContext]:
    """A CA of the attacker's, and a server context presenting api.anthropic.com signed by it."""
    ca_key, ca, key, csr, leaf = (tmp_path / n for n in ("ca.key", "ca.pem", "k", "csr", "leaf"))
    _openssl(
        *("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key)),
        *("-out", str(ca), "-days", "2", "-subj", "/CN=stub ca"),
    )
    _openssl(
        *("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr)),
        *("-subj", "/CN=api.anthropic.com"),
    )
    ext = tmp_path / "ext"
    ext.write_text("subjectAltName=DNS:api.anthropic.com\n")
    _openssl(
        *("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key)),
        *("-CAcreateserial", "-out", str(leaf), "-days", "2", "-extfile", str(ext)),
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(leaf), str(key))
    return ca, context


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def mitm(tmp_path: Path) -> Iterator[tuple[int, Path, list[int]]]:
    """A loopback CONNECT proxy that answers TLS for any host with the stub CA's certificate
    and relays the plain bytes to a port set later: (proxy port, the CA file, [target port])."""
    ca, context = _stub_ca(tmp_path)
    target: list[int] = []
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head and (chunk := conn.recv(4096)):
                head += chunk
            if not head.startswith(b"CONNECT "):
                return
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            tls = context.wrap_socket(conn, server_side=True)
            upstream = socket.create_connection(("127.0.0.1", target[0]))
            threading.Thread(target=_pipe, args=(upstream, tls), daemon=True).start()
            _pipe(tls, upstream)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1], ca, target
    stop.set()
    listener.close()


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_stub_behind_a_proxy_and_a_custom_ca_is_recorded_and_refused(
    fake, mitm, direct, tmp_path: Path, capsys
) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    (tmp_path / "skillbench.toml").write_text("max_retries = 1\nrequest_timeout = 30.0\n")
    server = fake(
        {
            "conversations": [
                conv(CAND, "Task a", write_file("a", "made"), {"text": "done"}),
                conv(BASE, "Task a", {"text": "I skip it."}),
            ]
        }
    )
    port, ca, target = mitm
    target.append(int(server.url.rsplit(":", 1)[1]))
    direct.delenv("ANTHROPIC_BASE_URL")  # the SDK names the provider's own URL
    direct.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    direct.setenv("SSL_CERT_FILE", str(ca))
    out = tmp_path / "run"
    code = main(
        [
            *("eval", str(skill), "--model", MODEL, "--out", str(out), "--quiet", "--no-gen"),
            *("--execution-only", "--seed", "7"),
        ]
    )
    assert code == 3, capsys.readouterr().err  # one case, played by the stub: INCONCLUSIVE
    assert len(server.requests) >= 2  # the stub answered as api.anthropic.com
    capsys.readouterr()
    stub = {
        "url": ANTHROPIC,
        "provider": False,
        "proxy": f"http://127.0.0.1:{port}",
        "ca": ["SSL_CERT_FILE"],
    }
    written = json.loads((out / "receipt.json").read_text())
    assert written["provenance"]["endpoints"] == {"agent": stub, "judge": stub}
    assert publish(capsys, skill, repo)[0] == 0
    code, said = gate(capsys, skill, repo, "--allow-inconclusive")
    assert code == 1 and "model at https://api.anthropic.com through the proxy" in said, said
