"""A case with both a network allowance and compose services (issue 37): the egress relay
and the pod's shared network namespace must coexist. Before the fix such a case never
started its executor ("the command executor did not start"), so Harbor tasks with a
sidecar had to say `allow_internet = false` to run at all."""

from __future__ import annotations

import ipaddress
import json
import socket
from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import skill, write
from tests.sandbox.test_services import HARBOR

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]


def test_a_harbor_task_with_a_service_and_the_default_network_runs(tmp_path: Path, capsys) -> None:
    task = dict(HARBOR)
    # allow_internet absent: Harbor's default, true
    task["ask-api/task.toml"] = 'version = "1.0"\n[agent]\ntimeout_sec = 300\n'
    # the verifier reaches PyPI through its proxy, as public verifiers do to install uv and
    # pytest, while it queries the sidecar directly (the proxy's log is what is asserted: a
    # local mirror's certificate may not be trusted in the image)
    task["ask-api/tests/test.sh"] = HARBOR["ask-api/tests/test.sh"].replace(
        "mkdir -p /logs/verifier\n",
        "mkdir -p /logs/verifier\n"
        "python3 -c \"import urllib.request as u; u.urlopen('https://pypi.org/simple/pip/', "
        'timeout=30)" 2>/dev/null; true\n',
    )
    into = skill(tmp_path, {})
    src = write(tmp_path / "harbor", task)
    assert main(["import", "harbor", str(src / "ask-api"), "--into", str(into)]) == 0
    said = capsys.readouterr().out
    assert "mapped to `network: [deb.debian.org" in said, said
    address = socket.gethostbyname("pypi.org")
    if ipaddress.ip_address(address).is_private:
        # a machine whose PyPI is a local mirror (this one's): the proxy refuses a name that
        # resolves to a private address unless that address is listed too
        case = into / "evals/cases/ask-api.yaml"
        text = case.read_text()
        assert "network: [deb.debian.org, " in text, text
        case.write_text(
            text.replace("network: [deb.debian.org, ", f"network: [deb.debian.org, {address}, ")
        )
    out = tmp_path / "oracle"
    code = main(["eval", str(into), "--oracle", "--model", "scripted/demo", "--out", str(out)])
    report, said = capsys.readouterr()
    assert code == 0 and "oracle PASS: ask-api" in report, report
    assert "network: ask-api: agent egress proxy to deb.debian.org, " in said, said
    seen = [json.loads(x) for x in (out / "network/ask-api.oracle.jsonl").open()]
    assert {(e["phase"], e["host"], e["port"], e["allowed"]) for e in seen} == {
        ("verifier", "pypi.org", 443, True)
    }, seen
    # the user's restriction: no phase reaches anything, and the report says so
    out = tmp_path / "offline"
    args = ["eval", str(into), "--oracle", "--model", "scripted/demo", "--out", str(out)]
    assert main([*args, "--network", "none"]) == 0
    said = capsys.readouterr().err
    assert "network: ask-api: agent none (--network none) · verifier none (--network none)" in (
        said
    ), said
    assert not (out / "network/ask-api.oracle.jsonl").exists()
