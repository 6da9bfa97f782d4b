"""The podman provider: the shared conformance suite, plus podman-specific behaviour."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from skillbench.evals import load_case
from skillbench.sandbox.base import CHECKER, SandboxError, SandboxSpec
from skillbench.sandbox.checker_env import CHECK_ENV
from skillbench.sandbox.conformance import SandboxConformance
from skillbench.sandbox.podman.channel import CHANNEL_ENV
from skillbench.sandbox.podman.provider import LABEL, OWNER_LABEL, PodmanProvider, PodmanSandbox
from skillbench.sandbox.podman.workspace import remove_volume
from skillbench.sandbox.runtime import runtime_dir
from skillbench.sandbox.stage import check_phase, stage_arm
from tests.conftest import CHANNELS
from tests.helpers import make_skill

pytestmark = pytest.mark.sandbox


@pytest.fixture
async def sandbox(provider: PodmanProvider, spec: SandboxSpec) -> AsyncIterator[PodmanSandbox]:
    box = await provider.create(spec)
    yield box
    await box.close()


@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
class TestPodmanConformance(SandboxConformance):
    """Both executor channels (sandbox/podman/channel.py) against the local service."""


@pytest.mark.anyio
async def test_containers_are_labelled_and_removed(provider: PodmanProvider, spec) -> None:
    box = await provider.create(spec)
    found = provider.client().containers.list(filters={"label": LABEL})
    assert box.ctr_id in [c.id for c in found]
    await box.close()
    remaining = provider.client().containers.list(all=True, filters={"label": LABEL})
    assert box.ctr_id not in [c.id for c in remaining]
    with pytest.raises(SandboxError, match="closed"):
        await box.exec("true")


@pytest.mark.anyio
async def test_sweep_removes_leftovers_of_dead_processes(provider: PodmanProvider, spec) -> None:
    box = await provider.create(
        SandboxSpec(image=spec.image, labels={"skillbench.owner": f"{_host()}:999999"})
    )
    leftover = runtime_dir() / "sb-999999-abc"
    leftover.mkdir(exist_ok=True)
    volume = provider.client().volumes.create(
        "skillbench-ws-999999-test", labels={LABEL: "1", OWNER_LABEL: f"{_host()}:999999"}
    )
    assert provider.sweep() >= 1
    ids = [c.id for c in provider.client().containers.list(all=True, filters={"label": LABEL})]
    assert box.ctr_id not in ids
    assert not leftover.exists()  # host-side files of dead owners go too
    assert not provider.client().volumes.exists(volume.name)  # and their workspaces


@pytest.mark.anyio
async def test_workspace_outlives_its_sandbox_has_a_cap_and_is_removed(
    provider: PodmanProvider, spec: SandboxSpec
) -> None:
    workspace = await provider.workspace("8m")
    first = await provider.create(msgspec.structs.replace(spec, workspace=workspace.name))
    full = await first.exec("echo kept > a.txt; head -c 20000000 /dev/zero > big; echo $?")
    assert full.stdout == "1\n" and "No space left on device" in full.stderr
    second = await provider.create(
        msgspec.structs.replace(spec, workspace=workspace.name, user=CHECKER)
    )
    await first.close()
    assert (await second.exec("cat a.txt; id -un")).stdout == "kept\nchecker\n"
    await second.close()
    await workspace.close()
    await workspace.close()  # idempotent
    assert not provider.client().volumes.exists(workspace.name)


@pytest.mark.anyio
async def test_a_workspace_in_use_is_never_removed_by_force(
    provider: PodmanProvider, spec: SandboxSpec
) -> None:
    """LEAK1 (issue 38): podman 4.3's forced volume removal locks the volume, then each
    container using it, the reverse of a container's own cleanup (podman#23613): an
    interrupted run's workspace removal beside its sandbox's stop deadlocked podman for every
    process on the host. A workspace is removed only once no container uses it."""
    workspace = await provider.workspace("8m")
    box = await provider.create(msgspec.structs.replace(spec, workspace=workspace.name))
    with pytest.raises(SandboxError, match="being used"):
        await workspace.close()
    assert (await box.exec("echo alive")).stdout == "alive\n"  # not removed with the volume
    await box.close()
    remove_volume(provider.client(), workspace.name)
    remove_volume(provider.client(), workspace.name)  # gone already is fine
    assert not provider.client().volumes.exists(workspace.name)


@pytest.mark.anyio
async def test_a_close_cancelled_midway_still_removes_everything(
    podman_service, provider: PodmanProvider, spec: SandboxSpec
) -> None:
    """LEAK1 (issue 38): a first Ctrl-C landing while a run closes cancelled its provider's
    close midway, so what came after the await it landed in (the workspaces' removal, the
    sweep) never ran and the workspace volume outlived the run. The close now runs to its
    end and the cancellation is raised after."""
    mine = PodmanProvider(podman_service)
    workspace = await mine.workspace("8m")
    box = await mine.create(msgspec.structs.replace(spec, workspace=workspace.name))
    closing = asyncio.ensure_future(mine.aclose())
    # one turn of the loop: the close is into the sandboxes' removal (a thread's podman
    # call), before the workspaces' — a timed sleep let a fast removal finish first
    await asyncio.sleep(0)
    assert not closing.done()
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    client = provider.client()  # (another provider's: `mine` is closed)
    assert not client.volumes.exists(workspace.name)
    assert box.ctr_id not in [c.id for c in client.containers.list(all=True)]


def _host() -> str:
    import socket

    return socket.gethostname()


@pytest.mark.anyio
async def test_bad_image_is_a_sandbox_error(provider: PodmanProvider) -> None:
    with pytest.raises(SandboxError, match="could not create a sandbox"):
        await provider.create(SandboxSpec(image="localhost/no-such-image:0"))


@pytest.mark.anyio
@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_skillbench_in_the_checker_runs_or_refuses_in_one_line(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """The host's install is mounted into checkers on the local channel; on the api one it is
    not copied (hundreds of MB per checker) and `skillbench` there says why in one line."""
    skill = make_skill(tmp_path, "demo", {"evals/cases/use.yaml": "task: t\nchecks: []\n"})
    case, _ = load_case(skill / "evals/cases/use.yaml", skill)
    arm = await stage_arm(provider, spec, case, {}, scratch=tmp_path)
    try:
        checker = await check_phase(provider, spec, arm, skill)
        done = await checker.exec(["skillbench", "--version"], env=CHECK_ENV)
        if provider.channel == "local":
            assert done.ok and done.stdout.startswith("skillbench"), done
        else:
            assert done.exit_code == 2 and len(done.stderr.splitlines()) == 1, done
            assert "shares no filesystem" in done.stderr and CHANNEL_ENV in done.stderr
    finally:
        await arm.close()


@pytest.mark.anyio
@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_large_transfers_cross_either_channel_intact(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """put_tree (tar over the executor's stdin), a 24 MiB read_file (one reply line), a
    4 MiB exec output and get_tree (the archive API) on both channels, byte for byte."""
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    blobs = {f"sub/b{n}.bin": os.urandom(8 << 20) for n in range(3)}
    for rel, data in blobs.items():
        (src / rel).write_bytes(data)
    box = await provider.create(spec)
    try:
        await box.put_tree(src, "/work/in")
        assert await box.read_file("in/sub/b0.bin") == blobs["sub/b0.bin"]
        big = await box.exec(
            "cat in/sub/*.bin > all.bin && head -c 4194304 all.bin | base64 -w0",
            output_cap=16 << 20,
        )
        assert big.ok and not big.truncated
        assert base64.b64decode(big.stdout) == blobs["sub/b0.bin"][: 4 << 20]
        whole = await box.read_file("all.bin")
        assert whole == b"".join(blobs[k] for k in sorted(blobs))
        back = tmp_path / "back"
        assert await box.get_tree("/work/in", back) == []
        assert {rel: (back / rel).read_bytes() for rel in blobs} == blobs
    finally:
        await box.close()


@pytest.mark.anyio
async def test_keeping_a_workspace_is_bounded_in_time(
    sandbox: PodmanSandbox, tmp_path: Path
) -> None:
    """Thousands of files beside one that cannot fit are each copied by their own archive
    call (~0.1 s each): the copy stops at its time and says what it left out."""
    made = await sandbox.exec(
        "mkdir -p keep && head -c 4096 /dev/zero > keep/big.bin"
        " && cd keep && seq 1 3000 | xargs touch"
    )
    assert made.ok, made.stderr
    back = tmp_path / "back"
    loop = asyncio.get_running_loop()
    start = loop.time()
    notes = await sandbox.get_tree("/work/keep", back, cap=1024, seconds=3)
    took = loop.time() - start
    assert took < 30, took
    assert any(n.startswith("copy stopped after 3 s: ") for n in notes), notes
    copied = {p.name for p in back.iterdir()}
    assert "big.bin" not in copied and 0 < len(copied) < 3000
