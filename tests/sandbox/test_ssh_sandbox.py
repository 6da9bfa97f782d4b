"""Sandboxes on the podman service reached only over ssh:// (tests/ssh_service.py): the first
sandbox loads the image into it, then the conformance suite and the isolation tests run there
on the API channel, the provider made exactly as an eval makes it (from CONTAINER_HOST)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.conformance import SandboxConformance
from skillbench.sandbox.podman.provider import PodmanProvider, PodmanSandbox

# the isolation tests, collected here: they run against this module's `provider`
from tests.security.test_isolation import (  # noqa: F401
    test_fork_bomb_is_contained,
    test_memory_hog_is_killed_and_sandbox_survives,
    test_no_network,
    test_skill_is_read_only_and_evals_invisible_and_no_host_env,
)
from tests.ssh_service import SshPodman

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]


@pytest.fixture
async def provider(over_ssh: SshPodman) -> AsyncIterator[PodmanProvider]:
    made = PodmanProvider()  # what make_provider() does: the service CONTAINER_HOST names
    assert made.service.connection.transport == "ssh" and made.channel == "api"
    yield made
    await made.aclose()


@pytest.fixture
async def sandbox(provider: PodmanProvider, spec: SandboxSpec) -> AsyncIterator[PodmanSandbox]:
    box = await provider.create(spec)
    yield box
    await box.close()


async def test_the_first_sandbox_loads_the_image_into_the_service(
    over_ssh: SshPodman, spec: SandboxSpec, capfd
) -> None:
    with over_ssh.direct() as direct:
        for image in direct.images.list():
            direct.images.remove(image.id, force=True)
    made = PodmanProvider()
    try:
        box = await made.create(spec)
        assert (await box.exec("cat /etc/debian_version")).ok
        await box.close()
        again = await made.create(spec)  # checked once per provider: no second load
        await again.close()
    finally:
        await made.aclose()
    err = capfd.readouterr().err.splitlines()
    loads = [line for line in err if line.startswith(f"skillbench: loading {spec.image} (")]
    assert len(loads) == 1, err
    assert loads[0].endswith(f"into the podman service at {over_ssh.url} (ssh)")
    with over_ssh.direct() as direct:
        assert direct.images.exists(spec.image)
        assert direct.containers.list(all=True) == []  # both removed, in that service


class TestSshConformance(SandboxConformance):
    """The suite every provider passes, on the ssh-only service."""
