"""The checker starts while the agent works, and the agent's sandbox is stopped, not removed,
before the handover (issue 27 part 1): the new ordering must keep docs/trust.md whole.
The agent leaves processes behind that outlive its phase (forked away, in a new session,
ignoring signals, holding a descriptor to a file the check reads) and none of their writes
reaches the check; the early checker is out of the agent's reach; and no container outlives
its arm on any path (closed while the checker still starts, a cancelled check phase, the end
of a run)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from pathlib import Path

import pytest
from msgspec.structs import replace
from podman import PodmanClient

from skillbench.evals import load_case
from skillbench.evals.services import Service
from skillbench.sandbox.base import Relay, SandboxError, SandboxSpec
from skillbench.sandbox.egress import PROXY_PORT
from skillbench.sandbox.podman.provider import OWNER_LABEL, PROVIDER_LABEL, PodmanProvider
from skillbench.sandbox.stage import StagedArm, check_phase, stage_arm, start_checker
from tests.helpers import BASE, CAND, bash, conv, run_eval, skill, write

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("podman_service")]

# Started by the agent, then left running: a writer that waits for the handover (the files
# become the checker's) to write through the descriptor it opened before, and a plain one
# that ignores every signal it can. Both only stop when the kernel ends them.
LINGER = (
    "echo honest > out.txt; "
    "(setsid sh -c 'exec 3>>/work/out.txt; "
    'while [ "$(stat -c %u /work/out.txt)" = 1000 ]; do echo t >> /work/tick; sleep 0.02; done; '
    "echo cheat >&3; echo cheat >> /work/tick' </dev/null >/dev/null 2>&1 &); "
    "nohup sh -c 'trap \"\" TERM HUP INT; while :; do echo n >> /work/tock; sleep 0.02; done' "
    ">/dev/null 2>&1 & "
    "sleep 0.3; echo started"
)
# both writers ran, and neither writes once the check phase has begun
STILL = (
    "grep -qx honest out.txt && test -s tick && test -s tock && a=$(cat tick tock | wc -c) && "
    'sleep 0.5 && test "$a" = "$(cat tick tock | wc -c)" && ! grep -q cheat tick out.txt'
)


def left_over(labels: dict[str, str]) -> list[str]:
    """Containers and volumes carrying `labels`' owner or provider label."""
    with PodmanClient(base_url=os.environ["SKILLBENCH_PODMAN_URL"]) as client:
        found = []
        for key, value in labels.items():
            mine = {"label": f"{key}={value}"}
            found += [c.name for c in client.containers.list(all=True, filters=mine)]
            found += [v.name for v in client.volumes.list(filters=mine)]
        return found


def in_cgroup(ctr_id: str) -> list[str]:
    """The host PIDs of the processes in container `ctr_id`'s cgroup that still run: not
    PID 1's zombie, which its parent (conmon, outside) reaps a moment after the pidfd turned
    readable (measured: 3 of 20 stops saw it; it runs nothing and holds no descriptor)."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            ours = proc.name.isdigit() and f"libpod-{ctr_id}" in (proc / "cgroup").read_text()
            if ours and "\nState:\tZ" not in (proc / "status").read_text():
                found.append(proc.name)
    return found


@pytest.mark.e2e
def test_no_agent_process_writes_after_its_phase(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {"evals/cases/late.yaml": f"task: Task late\nchecks:\n  - command_succeeds: '{STILL}'\n"},
    )
    fake(
        {
            "conversations": [
                conv(CAND, "Task late", bash(LINGER), {"text": "done"}),
                conv(BASE, "Task late", {"text": "no"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # one unit: too few to decide
    arm = summary["rows"][0]["arms"]["candidate"]
    assert arm["passed"], arm["checks"]
    transcript = (tmp_path / "run/transcripts/late.candidate.1.jsonl").read_text()
    assert "started" in transcript
    # the run is over: every sandbox (stopped ones removed later, early checkers) is gone
    assert left_over({OWNER_LABEL: f"{os.uname().nodename}:{os.getpid()}"}) == []


def one_case(tmp_path: Path) -> tuple[Path, object]:
    folder = write(
        tmp_path / "sk",
        {
            "SKILL.md": "---\nname: sk\ndescription: A skill.\n---\n",
            "evals/secret.txt": "the answer key\n",
            "evals/cases/c.yaml": "task: t\nchecks: [{file_exists: x}]\n",
        },
    )
    case, _ = load_case(folder / "evals/cases/c.yaml", folder)
    return folder, case


@pytest.mark.anyio
async def test_the_early_checker_is_out_of_the_agents_reach(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    # the host end of the verifier's egress relay: what reaches it is counted
    server = socket.create_server(("127.0.0.1", 0))
    reached: list[int] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                reached.append(1)
                conn.close()

    threading.Thread(target=accept, daemon=True).start()
    folder, case = one_case(tmp_path)
    check_spec = replace(spec, egress=Relay(PROXY_PORT, "127.0.0.1", server.getsockname()[1]))
    arm = await stage_arm(provider, spec, case, {}, scratch=tmp_path / "scratch")
    try:
        start_checker(provider, check_spec, arm, folder)
        assert arm.opening is not None
        early = await arm.opening  # up and running, in the middle of the agent's phase
        connect = (
            "import socket\ntry:\n"
            f"  socket.create_connection(('127.0.0.1', {PROXY_PORT}), timeout=2)\n"
            "  print('reached')\nexcept OSError:\n  print('refused')\n"
        )
        probe = await arm.sandbox.exec(
            'python3 -c "$P"; test -e /case && echo case-visible; '
            "grep -l '[e]xecutor.py' /proc/[0-9]*/cmdline 2>/dev/null | wc -l; "
            "echo mine > /tmp/agent-tmp; echo kept > x",
            env={"P": connect},
        )
        assert probe.stdout.split() == ["refused", "1"], probe  # one executor: its own
        assert reached == []
        checker = await check_phase(provider, check_spec, arm, folder)
        assert checker is early
        with pytest.raises(SandboxError):  # stopped: nothing of the agent's runs any more
            await arm.sandbox.exec("true")
        seen = await checker.exec(
            "cat x; cat /case/secret.txt; test -e /tmp/agent-tmp || echo fresh-tmp; "
            'python3 -c "$P"',
            env={"P": connect},
        )
        assert seen.stdout.split("\n")[:4] == ["kept", "the answer key", "fresh-tmp", "reached"]
        assert reached == [1]  # the relay was there all along, for the checker only
    finally:
        await arm.close()
        server.close()


async def staged(provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path) -> StagedArm:
    folder, case = one_case(tmp_path)
    arm = await stage_arm(provider, spec, case, {}, scratch=tmp_path / "scratch")
    start_checker(provider, spec, arm, folder)
    return arm


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["closed-while-starting", "check-phase-cancelled", "checked"])
async def test_an_early_checker_never_outlives_its_arm(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path, path: str
) -> None:
    arm = await staged(provider, spec, tmp_path)
    if path == "check-phase-cancelled":  # Ctrl-C while the session waits for its checker
        task = asyncio.ensure_future(check_phase(provider, spec, arm, tmp_path / "sk"))
        await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    elif path == "checked":
        await check_phase(provider, spec, arm, tmp_path / "sk")
    await arm.close()
    # gone with the arm, not left to the provider's final sweep
    assert left_over({PROVIDER_LABEL: provider.labels[PROVIDER_LABEL]}) == []


@pytest.mark.anyio
async def test_in_a_pod_a_listening_checker_waits_for_the_handover(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    folder, case = one_case(tmp_path)
    podded = replace(spec, services=(Service(name="svc", command=("sleep", "600")),))
    arm = await stage_arm(provider, podded, case, {}, scratch=tmp_path / "scratch")
    try:
        # the pod's network is the agent's too: a relay listening there would be the agent's
        start_checker(
            provider, replace(podded, egress=Relay(PROXY_PORT, "127.0.0.1", 9)), arm, folder
        )
        assert arm.opening is None
        start_checker(provider, podded, arm, folder)  # one that listens nowhere starts early
        assert arm.opening is not None
        await arm.sandbox.exec("echo kept > x")
        checker = await check_phase(provider, podded, arm, folder)
        assert (await checker.exec("cat x")).stdout == "kept\n"
    finally:
        await arm.close()


@pytest.mark.anyio
@pytest.mark.parametrize("pidfd", [True, False])
async def test_stop_ends_every_process_and_keeps_the_container(
    provider: PodmanProvider, spec: SandboxSpec, pidfd: bool
) -> None:
    box = await provider.create(spec)
    try:
        await box.exec(
            "(setsid sh -c 'trap \"\" TERM; sleep 600' &) ; nohup sleep 600 >/dev/null &"
        )
        if not pidfd:  # as with a podman service in another PID namespace: podman's stop
            box._init = None
        await box.stop()
        assert in_cgroup(box.ctr_id) == []  # not one process of the sandbox is left
        # podman learns of PID 1's end from conmon a moment after a pidfd kill; its state
        # must follow (within seconds), and the container must still be there until close
        for _ in range(100):
            state = provider.client().api.get(f"/containers/{box.ctr_id}/json").json()["State"]
            if not state["Running"]:
                break
            await asyncio.sleep(0.1)
        assert state["Status"] in ("exited", "stopped") and not state["Running"], state
        with pytest.raises(SandboxError):
            await box.exec("true")
    finally:
        await box.close()
    assert left_over({PROVIDER_LABEL: provider.labels[PROVIDER_LABEL]}) == []
