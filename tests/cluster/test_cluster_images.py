"""`cluster prepare`'s two ends without Ray (the Ray path is tests/cluster/test_cluster.py): the
driver reads and saves its own podman's images even under CONTAINER_HOST, and a node whose
podman is remote (ssh://, tests/ssh_service.py) gets them through the service's API."""

from __future__ import annotations

import io
import subprocess
import tarfile
import uuid
from collections.abc import Iterator

import pytest

from skillbench.agents import make_agent
from skillbench.cluster.images import default_images, driver_ids, node_ids, node_load
from skillbench.sandbox.base import SandboxError
from skillbench.sandbox.podman.connection import configured
from skillbench.sandbox.podman.hostcli import host_env
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.imageload import host_image, saved
from skillbench.sandbox.podman.reach import client_of
from skillbench.sandbox.podman.variants import variant_name
from tests.ssh_service import SshPodman

pytestmark = pytest.mark.sandbox


@pytest.fixture
def tiny() -> Iterator[str]:
    """An image of one small file in the host's podman only (a quick load over ssh)."""
    name = f"localhost/skillbench-test-tiny:{uuid.uuid4().hex[:8]}"
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        data = b"tiny\n"
        info = tarfile.TarInfo("tiny.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    subprocess.run(
        ["podman", "import", "-q", "-", name],
        input=layer.getvalue(),
        check=True,
        capture_output=True,
        env=host_env(),
    )
    yield name
    subprocess.run(["podman", "rmi", "-f", name], capture_output=True, env=host_env())


def test_a_node_whose_podman_is_remote_loads_through_the_api_from_the_drivers_own_podman(
    over_ssh: SshPodman, tiny: str
) -> None:
    found = host_image(tiny)
    assert found is not None
    # the driver, under CONTAINER_HOST=ssh://…: its own image, not the remote service's
    assert driver_ids([tiny]) == {tiny: found[0]}
    # the node (this process, same environment): its sessions' service lacks it
    assert node_ids([tiny]) == {tiny: None}
    node_load(tiny, found[0], saved(tiny, 4096))
    assert node_ids([tiny]) == {tiny: found[0]}
    connection = configured()
    assert connection is not None and connection.transport == "ssh"
    with client_of(connection, 30) as client:  # (the service itself, as the sandboxes see it)
        assert client.images.get(tiny).id == found[0]
        client.images.remove(tiny, force=True)
    with pytest.raises(SandboxError) as exc:  # an archive that is not the driver's image
        node_load(tiny, "sha256:" + "0" * 64, saved(tiny))
    message = str(exc.value)
    assert "\n" not in message and f"{tiny} has ID" in message and over_ssh.url in message


def test_prepare_ships_the_node_variant_once_it_is_built_with_each_agents_image() -> None:
    node = variant_name("node")
    claude = make_agent("claude-code")
    images = default_images([claude])
    assert images[0] == IMAGE and claude.image_name(IMAGE) in images
    assert (node in images) == (host_image(node) is not None)
    built = host_image(claude.image_name(node)) is not None
    assert (claude.image_name(node) in images) == built
    assert default_images([]) == [IMAGE, *([node] if node in images else [])]
