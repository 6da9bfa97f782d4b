"""Isolation against real podman: network, pids, memory, the read-only skill, the invisible
evals folder and the host's environment."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from skillbench.evals import load_case
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import LABEL, PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm
from tests.conftest import CHANNELS
from tests.helpers import make_skill

# on both executor channels (sandbox/podman/channel.py): the api one copies /skills in and carries
# everything over an attach, and must hold the same lines
pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.anyio,
    pytest.mark.parametrize("channel", CHANNELS, indirect=True),
]


async def test_no_network(provider: PodmanProvider, spec: SandboxSpec) -> None:
    box = await provider.create(spec)
    try:
        assert (await box.exec("ls /sys/class/net")).stdout.split() == ["lo"]
        probe = await box.exec(
            "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\""
        )
        assert probe.exit_code != 0 and "Network is unreachable" in probe.stderr
    finally:
        await box.close()


async def test_fork_bomb_is_contained(provider: PodmanProvider, spec: SandboxSpec) -> None:
    box = await provider.create(msgspec.structs.replace(spec, pids=128))
    try:
        bomb = await box.exec("bomb() { bomb | bomb & }; bomb; sleep 5", timeout=20)
        assert "fork: retry: Resource temporarily unavailable" in bomb.stderr  # the limit bit
    finally:
        await box.close()  # the bomb still runs: removal must work from outside
    left = provider.client().containers.list(all=True, filters={"label": LABEL})
    assert box.ctr_id not in [c.id for c in left]
    fresh = await provider.create(spec)
    try:
        assert (await fresh.exec("echo alive")).stdout == "alive\n"
    finally:
        await fresh.close()


async def test_memory_hog_is_killed_and_sandbox_survives(
    provider: PodmanProvider, spec: SandboxSpec
) -> None:
    # the limit is memory plus the tmpfs caps (/work, HOME, /tmp): about 450 MB here
    box = await provider.create(msgspec.structs.replace(spec, memory="256m", disk="64m", tmp="64m"))
    try:
        hog = await box.exec("python3 -c 'x = bytearray(1024 * 1024 * 1024); print(len(x))'")
        assert hog.exit_code == 137 and hog.stdout == ""
        assert (await box.exec("echo alive")).stdout == "alive\n"
    finally:
        await box.close()


async def test_skill_is_read_only_and_evals_invisible_and_no_host_env(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = "EVALS-MARKER-7f3a9c"
    secret = "sk-ant-api03-HOSTSECRET-do-not-leak"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    skill = make_skill(
        tmp_path,
        "demo",
        {
            "evals/cases/use.yaml": f"task: t\nchecks: [{{transcript_mentions: {marker}}}]\n",
            f"evals/{marker}.txt": marker,
            "fixtures/top.txt": marker,
        },
    )
    case, _ = load_case(skill / "evals/cases/use.yaml", skill)
    arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    box = arm.sandbox
    try:
        for attempt in (
            "touch /skills/demo/new",
            "rm /skills/demo/SKILL.md",
            "echo x >> /skills/demo/SKILL.md",
            "mkdir /skills/other",
        ):
            assert (await box.exec(attempt)).exit_code != 0, attempt
            # and even root could not: the mount itself is read-only (on the api channel
            # /skills is a tmpfs filled after setup, root's: root there is only ever the host)
            if provider.channel == "local":
                done = await box.exec(attempt, user="root")
                assert done.exit_code != 0 and "Read-only file system" in done.stderr, attempt
        assert (await box.read_text("/skills/demo/SKILL.md")).startswith("---\nname: demo")

        search = f"find / -xdev \\( -path /proc -o -path /sys \\) -prune -o -name '*{marker}*' -print; grep -rl {marker} / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; true"
        assert (await box.exec(search, timeout=60)).stdout == ""

        seen = await box.exec("env; cat /proc/1/environ | tr '\\0' '\\n'; cat /proc/self/environ")
        assert secret not in seen.stdout and "API_KEY" not in seen.stdout

        checker = await check_phase(provider, spec, arm, skill)
        after = await checker.exec(search, timeout=60)
        assert f"/case/{marker}.txt" in after.stdout.split()
    finally:
        await arm.close()


async def test_orphans_are_reaped_so_the_pids_limit_holds(
    provider: PodmanProvider, spec: SandboxSpec
) -> None:
    box = await provider.create(msgspec.structs.replace(spec, pids=64))
    try:
        # 300 orphans, far more than the pids limit: each must be reaped by PID 1 once it exits
        made = await box.exec(
            "for i in $(seq 300); do (sleep 0.01 &); sleep 0.005; done; echo made", timeout=60
        )
        assert made.stdout == "made\n", made.stderr[-300:]
        zombies = await box.exec("sleep 0.5; ps -eo stat= | grep -c '^Z' || true")
        assert zombies.stdout.strip() == "0"
        assert (await box.exec("echo alive")).stdout == "alive\n"
    finally:
        await box.close()
