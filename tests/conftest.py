"""Shared fixtures: one podman service for the whole test run, the sandbox image."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from skillbench.models.fake_server import FakeModelServer
from skillbench.models.script import parse_script
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.channel import Channel
from skillbench.sandbox.podman.connection import URL_ENV
from skillbench.sandbox.podman.image import IMAGE, image_exists
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.podman.service import PodmanService
from skillbench.sandbox.podman.tunnel import close_all
from tests.ssh_service import SshPodman


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def podman_service() -> Iterator[PodmanService]:
    """A podman service shared by the run (and by CLI subprocesses, through the env)."""
    if not image_exists(IMAGE):
        pytest.fail(f"sandbox image {IMAGE} missing: run `make setup` (or skillbench image build)")
    service = PodmanService.start_or_reuse()
    old = os.environ.get(URL_ENV)
    os.environ[URL_ENV] = service.url
    yield service
    if old is None:
        os.environ.pop(URL_ENV, None)
    else:
        os.environ[URL_ENV] = old
    service.stop()


@pytest.fixture(scope="session")
def ssh_podman() -> Iterator[SshPodman]:
    """A second podman service reached only over ssh:// (tests/ssh_service.py), for the run."""
    service = SshPodman()
    try:
        yield service.start()
    finally:
        close_all()  # skillbench's tunnels first: sshd keeps a child per connection
        service.stop()


@pytest.fixture
def over_ssh(ssh_podman: SshPodman, monkeypatch: pytest.MonkeyPatch) -> SshPodman:
    """This test's skillbench talks to the ssh-only service (and to nothing else)."""
    for name in (URL_ENV, "CONTAINER_CONNECTION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in ssh_podman.env().items():
        monkeypatch.setenv(name, value)
    return ssh_podman


@pytest.fixture
def channel(request: pytest.FixtureRequest) -> Channel | None:
    """The executor channel the `provider` uses: the automatic choice, unless a test asks for
    one (`@pytest.mark.parametrize("channel", CHANNELS, indirect=True)`)."""
    return getattr(request, "param", None)


CHANNELS = ("local", "api")


@pytest.fixture
async def provider(
    podman_service: PodmanService, channel: Channel | None
) -> AsyncIterator[PodmanProvider]:
    prov = PodmanProvider(podman_service, channel=channel)
    yield prov
    await prov.aclose()


@pytest.fixture
def spec() -> SandboxSpec:
    return SandboxSpec(image=IMAGE)


@pytest.fixture(autouse=True)
def in_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in its own folder, as a user runs skillbench in their project: settings
    come from the current folder and above it (docs/trust.md), never from this repository."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def skillbench_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Receipts go to a per-test store, never to the real ~/.skillbench; the gate sees no
    GitHub Actions run (a test that means one sets it), even when the suite runs in one."""
    home = tmp_path_factory.mktemp("skillbench-home")
    monkeypatch.setenv("SKILLBENCH_HOME", str(home))
    for name in ("GITHUB_ACTIONS", "GITHUB_BASE_REF", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeModelServer]]:
    """Start a fake model server playing a script (a dict), on a free port unless given, and
    point both SDKs at it."""
    servers: list[FakeModelServer] = []

    def start(script: dict[str, Any], port: int = 0) -> FakeModelServer:
        server = FakeModelServer(parse_script(script), port=port).start()
        servers.append(server)
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def rules_server(
    fake: Callable[[dict[str, Any]], FakeModelServer],
) -> Callable[[list[dict[str, Any]]], FakeModelServer]:
    """A fake server playing only rules (trigger and generation calls are single requests)."""
    return lambda rules: fake({"rules": rules})
