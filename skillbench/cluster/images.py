"""`skillbench cluster prepare`: every node with skillbench slots holds the images a run needs,
checked by image ID before the first session is placed there. A missing or different image is
saved by the driver's own podman (`podman save`, never a remote one: hostcli.py), shipped
through Ray's object store in bounded chunks and streamed into the podman service the node's
sessions use, through its API (imageload.py), whether that service is local or remote."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from skillbench.cluster.connect import ClusterError, ray_module, slot_nodes
from skillbench.sandbox.base import SandboxError
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.imageload import (
    LOAD_TIMEOUT,
    described,
    host_image,
    saved,
    send,
    service_image_id,
)
from skillbench.sandbox.podman.variants import VARIANTS, variant_name

if TYPE_CHECKING:
    from podman import PodmanClient

    from skillbench.agents.base import Agent

CHUNK = 8 << 20  # bytes of an image archive per object


def default_images(agents: Iterable[Agent]) -> list[str]:
    """What `cluster prepare` ships: the sandbox image and each of its variants built here
    (a case that `requires: [node]` runs in one), with every agent's CLI added to each; an
    agent's image of a variant only once it is built (`eval` builds and ships it otherwise)."""
    bases = [IMAGE, *(v for v in map(variant_name, VARIANTS) if host_image(v) is not None)]
    found = list(bases)
    for agent in agents:
        found.append(agent.image_name(IMAGE))  # (required: prepare says to build it)
        found.extend(n for n in map(agent.image_name, bases[1:]) if host_image(n) is not None)
    return list(dict.fromkeys(found))


def driver_ids(names: list[str]) -> dict[str, str | None]:
    """The ID of each image in the driver's own podman, where it builds them (None: none)."""
    return {name: found[0] if (found := host_image(name)) else None for name in names}


@contextmanager
def _node_service() -> Iterator[tuple[PodmanClient, str]]:
    """On a node: a client of the podman service its sessions use (the sandbox provider's
    choice: the one its environment or podman's config names, else one of our own)."""
    from skillbench.sandbox.podman.service import PodmanService

    service = PodmanService.start_or_reuse()
    try:
        with service.client(LOAD_TIMEOUT) as client:
            yield client, described(service.connection)
    finally:
        service.stop()


def node_ids(names: list[str]) -> dict[str, str | None]:
    """On a node: the ID of each image in its sessions' podman service (None: it has none)."""
    with _node_service() as (client, _):
        return {name: service_image_id(client, name) for name in names}


def node_load(name: str, want: str, archive: Iterable[bytes]) -> None:
    """On a node: the archive of `name` into its sessions' podman service, which must then
    hold it with the ID `want` (the driver's)."""
    with _node_service() as (client, where):
        send(client, where, name, want, archive, lambda _: None)


def _node_load(name: str, want: str, chunks: list[Any]) -> None:
    ray = ray_module()
    node_load(name, want, (ray.get(ref) for ref in chunks))  # one chunk in memory at a time


def prepare(images: Iterable[str], log: Callable[[str], None]) -> dict[str, list[str]]:
    """Put every image on every slot node; returns node -> the images shipped to it."""
    ray = ray_module()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    wanted = sorted(set(images))
    ids = driver_ids(wanted)
    if missing := [n for n, i in ids.items() if i is None]:
        raise ClusterError(
            f"the driver lacks {', '.join(missing)}: run `skillbench image build` here first"
        )
    nodes = slot_nodes()
    if not nodes:
        raise ClusterError(
            "no node of the cluster offers skillbench slots: start workers with "
            "`skillbench cluster join ADDRESS --slots N`"
        )

    def on(node: dict[str, Any], label: str, fn: Callable[..., Any], *args: Any) -> Any:
        where = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        task = ray.remote(fn).options(num_cpus=0, scheduling_strategy=where)
        try:
            return ray.get(task.remote(*args))
        except ray.exceptions.RayTaskError as exc:  # its message, not the node's traceback
            raise ClusterError(f"{label}: {exc.cause}") from None
        except ray.exceptions.RayError as exc:  # the node left the cluster (died, lost)
            said = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            raise ClusterError(
                f"{label}: the node is gone ({type(exc).__name__}: {said}); check it and "
                "run `skillbench cluster prepare` again"
            ) from None

    archives: dict[str, list[Any]] = {}
    shipped: dict[str, list[str]] = {}
    for node in nodes:
        label = f"{node['NodeManagerAddress']}/{node['NodeID'][:8]}"
        have = on(node, label, node_ids, wanted)
        for name in (n for n in wanted if have.get(n) != ids[n]):
            if name not in archives:
                archives[name] = _save(name)
            log(f"cluster: loading {name} on {label}")
            on(node, label, _node_load, name, ids[name], archives[name])
            shipped.setdefault(label, []).append(name)
    return shipped


def _save(name: str) -> list[Any]:
    ray = ray_module()
    try:
        return [ray.put(chunk) for chunk in saved(name, CHUNK)]
    except SandboxError as exc:
        raise ClusterError(str(exc)) from None
