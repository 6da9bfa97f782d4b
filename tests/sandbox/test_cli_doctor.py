"""`skillbench doctor` and `skillbench image build` on this (set-up) machine."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.sandbox.capacity import mem_available, parallel_for
from skillbench.sandbox.podman.channel import CHANNEL_ENV
from skillbench.sandbox.podman.connection import NO_LOCAL_SERVICE, URL_ENV
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.reach import ping

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.sandbox


def test_doctor_reports_a_ready_machine(capsys) -> None:
    code = main(["doctor"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, out
    assert out[-1] == "all set"
    names = [
        line.split(":")[0].split(maxsplit=1)[1] for line in out[:-1] if not line.startswith("note")
    ]
    assert names == [
        "podman",
        "runc",
        "mmdebstrap",
        "podman config",
        "podman runtime",
        "podman service",
        "sandbox image",
    ]
    assert f"ok      sandbox image: {IMAGE}" in out
    assert any(
        line.startswith("note    agent claude-code: localhost/skillbench-claude-code:")
        and line.endswith(" built")
        for line in out
    )  # make setup built it
    node = [line for line in out if line[8:].startswith("node variant")]
    assert len(node) == 1 and node[0][8:].startswith(
        "node variant (cases with `requires: [node]`): localhost/skillbench-sandbox-node:"
    ), out
    # built on first use: "built" once it is, else how to build it now
    assert node[0].startswith("note    ") and (
        node[0].endswith(" built")
        or node[0].endswith(
            "not built yet (built on first use); `skillbench image build --node` builds it now"
        )
    ), node
    memory = [line for line in out if line.startswith("note    memory: ")]
    assert len(memory) == 1, out
    found = re.search(
        r"holds (\d+) builtin, (\d+) claude-code, (\d+) codex, (\d+) gemini-cli, "
        r"(\d+) copilot sessions",
        memory[0],
    )
    assert found, memory[0]
    builtin, claude, codex, gemini, copilot = map(int, found.groups())
    assert builtin > codex > claude > gemini > copilot >= 1  # a Copilot CLI session is the largest
    # this machine's figure (MemAvailable moves a little between the two reads)
    assert abs(claude - parallel_for("claude-code", mem_available())) <= max(2, claude // 20)


def test_image_build_skips_an_existing_image(capsys) -> None:
    assert main(["image", "build"]) == 0
    assert capsys.readouterr().out == f"image {IMAGE} already present\n"


@pytest.fixture
def tcp_service(tmp_path: Path) -> Iterator[str]:
    """A real podman service reached over tcp: it answers, but shares no socket folder."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        ["podman", "system", "service", "--time=0", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 30
        while not ping(url, timeout=1.0):
            assert proc.poll() is None and time.monotonic() < deadline, "tcp service never answered"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _service_lines(out: list[str]) -> list[str]:
    at = next(i for i, line in enumerate(out) if " podman service: " in line)
    return out[at : at + 2]


def test_doctor_names_the_service_and_that_it_shares_the_filesystem(
    capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (URL_ENV, "CONTAINER_HOST", "CONTAINER_CONNECTION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PODMAN_CONNECTIONS_CONF", "/nonexistent/podman-connections.json")
    main(["doctor"])
    line = _service_lines(capsys.readouterr().out.splitlines())[0]
    assert line.startswith("ok      podman service: a service of skillbench's own, started per run")
    assert line.endswith(": unix, shares this host's filesystem")


def test_a_service_that_shares_no_filesystem_runs_an_eval_through_the_api(
    tcp_service: str, capsys, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Over tcp nothing of the host is mounted: the api channel (sandbox/podman/channel.py) is chosen
    from the connection, and a whole eval (agent phase, broker relay, checker) runs on it."""
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.delenv(CHANNEL_ENV, raising=False)
    monkeypatch.setenv("CONTAINER_HOST", tcp_service)
    main(["doctor"])
    assert _service_lines(capsys.readouterr().out.splitlines())[0] == (
        f"ok      podman service: {tcp_service} (from CONTAINER_HOST): tcp, does not share "
        "this host's filesystem (sandboxes get their files and executor channel through the API)"
    )
    out = tmp_path / "r"
    args = ["eval", str(ROOT / "skills/diff-review"), "--model", "scripted/demo", "--no-gen"]
    code = main([*args, "--case", "small-change", "--execution-only", "--out", str(out)])
    err = capsys.readouterr().err
    assert (out / "summary.json").exists(), err[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    # (one case, one rep: too few rows for a verdict, so INCONCLUSIVE's exit 3)
    assert code == 3, (summary["verdict"], summary["why"], err[-1500:])
    assert summary["scored_rows"] == summary["expected_rows"] > 0
    arms = summary["rows"][0]["arms"]
    assert all(arm["passed"] and not arm["error"] for arm in arms.values()), arms


def test_a_configured_service_that_does_not_answer_is_named(
    capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.setenv("CONTAINER_HOST", "tcp://127.0.0.1:9")
    main(["doctor"])
    assert _service_lines(capsys.readouterr().out.splitlines()) == [
        "MISSING podman service: tcp://127.0.0.1:9 (from CONTAINER_HOST) does not answer",
        "        fix: start it (`podman machine start` for a podman machine) or unset "
        "CONTAINER_HOST",
    ]


def test_doctor_on_macos_checks_only_what_the_host_has(
    capsys, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """runc, mmdebstrap and the drop-in live in the podman machine VM there, not on the host."""
    monkeypatch.setattr(sys, "platform", "darwin")
    for name in (URL_ENV, "CONTAINER_HOST", "CONTAINER_CONNECTION", "PODMAN_CONNECTIONS_CONF"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line[8:].split(":")[0] for line in out if line[:3] in ("ok ", "MIS")] == [
        "podman",
        "podman service",
        "sandbox image",
    ]
    assert _service_lines(out) == [
        "MISSING podman service: none configured",
        f"        fix: {NO_LOCAL_SERVICE}",
    ]
