"""The API-only executor path and the early checker against the agent (docs/trust.md).

On the api channel the checker's /case, its tools and the executor's own files are copied
into its root filesystem (sandbox/podman/channel.py), not mounted, and the checker starts while the
agent works: the agent must not reach any of it during its phase, and no link it leaves may
lead to any of it after the handover, the list naming those places included. In a pod the
network namespace is shared with the early checker: nothing the agent leaves in it (a
listening port, an abstract socket) and nothing in the IPC namespace it may not share
(/dev/shm, /dev/mqueue) survives into the check phase."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from msgspec.structs import replace

from skillbench.evals.services import Service
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm, start_checker
from tests.conftest import CHANNELS
from tests.sandbox.test_checker_prestart import one_case

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]

# every place the api channel copies into the checker, the list of them, and their parents
COPIED = (
    "/opt/skillbench/copied-in",
    "/opt/skillbench/executor.py",
    "/opt/skillbench/handover.py",
    "/opt/skillbench/bin/skillbench",
    "/opt/skillbench",
    "/case/secret.txt",
    "/case",
)


@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_no_agent_link_leads_into_what_the_checker_was_given(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    folder, case = one_case(tmp_path)
    arm = await stage_arm(provider, spec, case, {}, scratch=tmp_path / "scratch")
    try:
        start_checker(provider, spec, arm, folder)
        links = "; ".join(f"ln -s {p} l{i}" for i, p in enumerate(COPIED))
        # while the checker runs beside it: nothing of what it was given is in reach
        probe = await arm.sandbox.exec(
            f"{links}; cat /case/secret.txt 2>/dev/null; "
            "grep -rlsx 'the answer key' / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; "
            "echo probed"
        )
        assert probe.stdout == "probed\n", probe
        checker = await check_phase(provider, spec, arm, folder)
        seen = await checker.exec(
            "for l in l*; do cat $l 2>/dev/null || ls $l/ 2>/dev/null; done; echo read"
        )
        assert seen.stdout == "read\n", (seen, arm.handover)
        assert (await checker.exec("cat /case/secret.txt")).stdout == "the answer key\n"
    finally:
        await arm.close()


@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_in_a_pod_nothing_the_agent_leaves_reaches_the_early_checker(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    folder, case = one_case(tmp_path)
    podded = replace(spec, services=(Service(name="svc", command=("sleep", "600")),))
    arm = await stage_arm(provider, podded, case, {}, scratch=tmp_path / "scratch")
    try:
        start_checker(provider, podded, arm, folder)
        assert arm.opening is not None
        await arm.opening  # running beside the agent, in the pod's network namespace
        # a listener on loopback and an abstract socket, left running; files in the IPC
        # namespace's places
        serve = (
            "import socket, time\n"
            "t = socket.create_server(('127.0.0.1', 7777))\n"
            "u = socket.socket(socket.AF_UNIX); u.bind('\\0skillbench-agent'); u.listen()\n"
            "open('/dev/shm/planted', 'w').write('agent')\n"
            "print('up', flush=True)\n"
            "while True: time.sleep(1)\n"
        )
        left = await arm.sandbox.exec(
            '(setsid python3 -c "$P" > /tmp/up 2>&1 &); sleep 1; cat /tmp/up', env={"P": serve}
        )
        assert left.stdout == "up\n", left
        checker = await check_phase(provider, podded, arm, folder)
        probe = (
            "import socket, os\n"
            "for family, address in ((socket.AF_INET, ('127.0.0.1', 7777)),"
            " (socket.AF_UNIX, '\\0skillbench-agent')):\n"
            "    s = socket.socket(family)\n"
            "    try:\n"
            "        s.connect(address); print('reached', address)\n"
            "    except OSError:\n"
            "        pass\n"
            "print(sorted(os.listdir('/dev/shm')), sorted(os.listdir('/dev/mqueue'))"
            " if os.path.isdir('/dev/mqueue') else [])\n"
        )
        seen = await checker.exec(["python3", "-c", probe])
        assert seen.stdout == "[] []\n", seen
    finally:
        await arm.close()


@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_the_stop_holds_the_sandboxs_own_pid_1_or_nothing(
    provider: PodmanProvider, spec: SandboxSpec
) -> None:
    """On the api channel the executor's connection is the podman service's socket (or the
    ssh tunnel's): its peer is podman, which the pidfd stop must never hold (it would kill
    the service); on the local one it is the sandbox's PID 1 and nothing else."""
    box = await provider.create(spec)
    try:
        init = box._init
        if provider.channel == "api":
            assert init is None
        else:
            assert init is not None and init._fd is not None
            fdinfo = Path(f"/proc/self/fdinfo/{init._fd}").read_text()
            pid = next(ln.split()[1] for ln in fdinfo.splitlines() if ln.startswith("Pid:"))
            assert box.ctr_id in Path(f"/proc/{pid}/cgroup").read_text()
            status = Path(f"/proc/{pid}/status").read_text()
            assert next(ln for ln in status.splitlines() if ln.startswith("NSpid:")).endswith("\t1")
        await box.stop()
        assert provider.service.connection is not None
        other = await provider.create(spec)  # the service still answers
        assert (await other.exec("echo up")).stdout == "up\n"
        await other.close()
    finally:
        await box.close()


@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_in_a_pod_the_agent_reaches_its_services_and_nothing_of_the_host(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """What an MCP entry (the case's, or one the agent writes for its CLI) could name: the
    host on every address it has, podman's gateway, the metadata address, the internet.
    The pod's network is loopback only; the service is reached, nothing else."""
    host = socket.create_server(("0.0.0.0", 0))
    port = host.getsockname()[1]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.connect(("192.0.2.1", 9))  # (no packet: the address the default route uses)
        lan = udp.getsockname()[0]
    _, case = one_case(tmp_path)
    service = Service(name="svc", command=("python3", "-m", "http.server", "8000"))
    podded = replace(spec, services=(service,))
    arm = await stage_arm(provider, podded, case, {}, scratch=tmp_path / "scratch")
    try:
        targets = [
            (lan, port),
            ("10.88.0.1", port),
            ("host.containers.internal", port),
            ("host.docker.internal", port),
            ("169.254.169.254", 80),
            ("1.1.1.1", 443),
        ]
        probe = (
            "import json, socket, sys, time\n"
            "for host, port in json.loads(sys.argv[1]):\n"
            "    try:\n"
            "        socket.create_connection((host, port), timeout=2); print('reached', host)\n"
            "    except OSError:\n"
            "        pass\n"
            "for _ in range(50):\n"
            "    try:\n"
            "        socket.create_connection(('svc', 8000), timeout=2); print('svc'); break\n"
            "    except OSError:\n"
            "        time.sleep(0.1)\n"
        )
        seen = await arm.sandbox.exec(["python3", "-c", probe, json.dumps(targets)], timeout=60)
        assert seen.stdout == "svc\n", seen
    finally:
        await arm.close()
        host.close()
