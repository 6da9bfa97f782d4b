"""A case's services and volumes are the suite's, and the suite is untrusted (issue 37 item 5,
docs/trust.md): a sidecar shares the arm's pod network with the agent's sandbox, yet must not
reach the host, the model broker through the agent's relay, or another arm; and what the agent
leaves in a volume it shares with the checker crosses over as /work does (no link the agent
made leads the verifier into the answer key)."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

import pytest
from msgspec.structs import replace

from skillbench.broker.server import Broker
from skillbench.evals import load_case
from skillbench.evals.services import Service, Volume
from skillbench.sandbox.base import Relay, SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm
from tests.helpers import skill

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio, pytest.mark.usefixtures("podman_service")]

BROKER_PORT = 4777  # the agent's loopback port relayed to the host's broker


def counting_server() -> tuple[socket.socket, list[bytes]]:
    """A host server standing for the broker: every connection and its first bytes."""
    server = socket.create_server(("127.0.0.1", 0))
    reached: list[bytes] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                conn.settimeout(1)
                got = b""
                with contextlib.suppress(OSError):
                    while chunk := conn.recv(4096):
                        got += chunk
                reached.append(got)
                conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return server, reached


def one_case(tmp_path: Path):
    folder = skill(
        tmp_path,
        {
            "evals/secret.txt": "the answer key\n",
            "evals/cases/c.yaml": "task: t\nchecks: [{file_exists: x}]\n",
        },
    )
    case, _ = load_case(folder / "evals/cases/c.yaml", folder)
    return folder, case


# a sidecar that keeps trying the agent's broker port and says what it saw
KNOCK = (
    "import socket, time\n"
    "while True:\n"
    "    try:\n"
    f"        s = socket.create_connection(('127.0.0.1', {BROKER_PORT}), timeout=1)\n"
    "        s.sendall(b'POST /v1/messages HTTP/1.1\\r\\n\\r\\n')\n"
    "        s.settimeout(2)\n"
    "        print('connected', s.recv(10), flush=True)\n"
    "    except OSError as e:\n"
    "        print('refused', e, flush=True)\n"
    "    time.sleep(0.2)\n"
)


async def broker_arm(provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path, port: int):
    _, case = one_case(tmp_path)
    sidecar = Service(name="evil", command=("python3", "-c", KNOCK))
    armed = replace(
        spec,
        services=(sidecar,),
        relay=Relay(BROKER_PORT, "127.0.0.1", port, preamble=b"secret\n"),
    )
    return await stage_arm(provider, armed, case, {}, scratch=tmp_path / "scratch")


async def test_a_sidecar_knocking_on_the_broker_port_does_not_stop_the_sandbox_starting(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    # the relay's first event used to come before the executor's "ready" when a service
    # connected while the host waited for it: "the command executor did not answer"
    server, reached = counting_server()
    arm = await broker_arm(provider, spec, tmp_path, server.getsockname()[1])
    try:
        own = await arm.sandbox.exec(
            "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', "
            f"{BROKER_PORT})); s.sendall(b'mine'); s.close()\"; sleep 2"
        )
        assert own.ok, own
        assert any(b"mine" in r for r in reached), reached  # the agent's own client gets through
    finally:
        await arm.close()
        server.close()


# a sidecar that spends through the agent's relay: whole Messages calls, with the key every
# session's CLI held before sessions had keys of their own
SPEND = (
    "import json, socket, time\n"
    "body = json.dumps({'model': 'claude-sonnet-4-6', 'max_tokens': 4000,\n"
    "                   'messages': [{'role': 'user', 'content': 'spend'}]}).encode()\n"
    "while True:\n"
    "    try:\n"
    f"        s = socket.create_connection(('127.0.0.1', {BROKER_PORT}), timeout=2)\n"
    "        s.sendall(b'POST /v1/messages HTTP/1.1\\r\\nhost: x\\r\\n'\n"
    "                  b'content-type: application/json\\r\\nanthropic-version: 2023-06-01\\r\\n'\n"
    "                  b'x-api-key: sk-ant-placeholder-the-broker-holds-the-key\\r\\n'\n"
    "                  b'content-length: %d\\r\\n\\r\\n' % len(body) + body)\n"
    "        s.settimeout(5)\n"
    "        print('answered', s.recv(12), flush=True)\n"
    "    except OSError as e:\n"
    "        print('refused', e, flush=True)\n"
    "    time.sleep(0.2)\n"
)


async def test_a_sidecar_cannot_spend_through_the_agents_broker_relay(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    # the pod's loopback is shared, so a sidecar reaches the agent's relay port and its
    # connections open with the relay's preamble; only the session's own key (in the CLI's
    # environment, never the sidecar's) gets a call forwarded
    upstream, reached = counting_server()
    broker = Broker(
        upstream=f"http://127.0.0.1:{upstream.getsockname()[1]}",
        api_key="sk-real-owner-key",
        model="anthropic/claude-sonnet-4-6",
        exchanges=tmp_path / "x.jsonl",
        budget=1.0,
        client_prefix="sk-ant-placeholder",
    ).start()
    _, case = one_case(tmp_path)
    armed = replace(
        spec,
        services=(Service(name="evil", command=("python3", "-c", SPEND)),),
        relay=Relay(BROKER_PORT, "127.0.0.1", broker.port, preamble=broker.preamble),
    )
    arm = await stage_arm(provider, armed, case, {}, scratch=tmp_path / "scratch")
    try:
        for _ in range(100):
            if broker.unkeyed >= 3 or reached:
                break
            await arm.sandbox.exec("sleep 0.2")
        assert reached == [] and broker.answered == 0 and broker.ledger.spent == 0
        assert broker.unkeyed >= 3  # the sidecar's calls came through the relay, and were refused
        # the session's own CLI, holding its key, still gets through (the same call, keyed)
        own = SPEND.replace("'spend'", "'mine'").replace(
            "sk-ant-placeholder-the-broker-holds-the-key", broker.client_key
        )
        own = own.replace("while True:", "for _ in range(1):")
        done = await arm.sandbox.exec(["python3", "-c", own], timeout=60)
        assert done.ok, done
        assert any(b"mine" in r for r in reached), reached
        assert all(b"spend" not in r for r in reached), reached
    finally:
        await arm.close()
        broker.stop()
        upstream.close()


async def test_a_sidecar_has_only_the_pods_loopback(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    _, case = one_case(tmp_path)
    probe = (
        "import os, socket\nprint(' '.join(sorted(os.listdir('/sys/class/net'))), flush=True)\n"
        "for host in ('10.88.0.1', '1.1.1.1', '169.254.169.254'):\n"
        "    try:\n"
        "        socket.create_connection((host, 80), timeout=2); print('reached', host)\n"
        "    except OSError:\n"
        "        print('unreachable', host)\n"
        "import time; time.sleep(600)\n"
    )
    sidecar = Service(name="nosy", command=("python3", "-u", "-c", probe))
    arm = await stage_arm(provider, replace(spec, services=(sidecar,)), case, {})
    try:
        assert arm.pod is not None
        ctr = provider.client().containers.get(f"{arm.pod.name}-nosy")
        for _ in range(50):
            logs = b"".join(ctr.logs(stdout=True, stderr=True)).decode()
            if logs.count("unreachable") + logs.count("reached") >= 3:
                break
            import time

            time.sleep(0.2)
        assert logs.split()[0] == "lo", logs
        assert "reached" not in logs.replace("unreachable", ""), logs
    finally:
        await arm.close()


async def test_a_link_the_agent_left_in_a_shared_volume_never_leads_into_the_answer_key(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    folder, case = one_case(tmp_path)
    shared = replace(
        spec,
        volumes=(Volume(name="shared", path="/shared"),),
        services=(Service(name="svc", command=("sleep", "600"), volumes={"shared": "/shared"}),),
    )
    arm = await stage_arm(provider, shared, case, {}, scratch=tmp_path / "scratch")
    try:
        planted = await arm.sandbox.exec(
            "ln -s /case/secret.txt /shared/out.txt && echo mine > /shared/own.txt && "
            "chmod 000 /shared/own.txt && ls /shared"
        )
        assert planted.ok, planted
        checker = await check_phase(provider, shared, arm, folder)
        seen = await checker.exec("cat /shared/out.txt; cat /shared/own.txt; cat /case/secret.txt")
        assert "the answer key" in seen.stdout  # (the checker has the key at /case)
        assert seen.stdout.count("the answer key") == 1, seen  # never through the agent's link
        assert "mine" in seen.stdout  # its own file is the checker's to read
        assert any("/shared/out.txt: a link to /case/secret.txt, cut" in n for n in arm.handover)
    finally:
        await arm.close()
