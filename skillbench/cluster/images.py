"""`skillbench cluster prepare`: every node with skillbench slots holds the images a run needs,
checked by image ID before the first session is placed there. A missing or different image is
saved on the driver (`podman save`), shipped through Ray's object store in bounded chunks and
loaded into the node's own podman service."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from skillbench.cluster.connect import ClusterError, ray_module, slot_nodes
from skillbench.sandbox.service import URL_ENV

CHUNK = 8 << 20  # bytes of an image archive per object


def _podman(*args: str) -> list[str]:
    """podman, talking to the service skillbench uses on this node."""
    url = os.environ.get(URL_ENV)
    return ["podman", *(["--url", url] if url else []), *args]


def image_id(name: str, podman: Callable[..., list[str]] = _podman) -> str | None:
    done = subprocess.run(
        podman("image", "inspect", "--format", "{{.Id}}", name), capture_output=True, text=True
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


def _node_ids(names: list[str]) -> dict[str, str | None]:
    return {name: image_id(name) for name in names}


def _node_load(name: str, chunks: list[Any]) -> str | None:
    """On a node: the archive from its chunks into a file, then into the node's podman."""
    ray = ray_module()
    with tempfile.NamedTemporaryFile(prefix="skillbench-image-", suffix=".tar") as f:
        for ref in chunks:  # one chunk in memory at a time
            f.write(ray.get(ref))
        f.flush()
        done = subprocess.run(_podman("load", "-q", "-i", f.name), capture_output=True, text=True)
        if done.returncode != 0:
            raise ClusterError(f"podman load of {name} failed: {done.stderr.strip()[-300:]}")
    return image_id(name)


def _local(*args: str) -> list[str]:
    return ["podman", *args]


def prepare(images: Iterable[str], log: Callable[[str], None]) -> dict[str, list[str]]:
    """Put every image on every slot node; returns node -> the images shipped to it."""
    ray = ray_module()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    wanted = sorted(set(images))
    ids = {name: image_id(name, _local) for name in wanted}
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

    def on(node: dict[str, Any], fn: Callable[..., Any]) -> Any:
        where = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        return ray.remote(fn).options(num_cpus=0, scheduling_strategy=where)

    archives: dict[str, list[Any]] = {}
    shipped: dict[str, list[str]] = {}
    for node in nodes:
        label = f"{node['NodeManagerAddress']}/{node['NodeID'][:8]}"
        have = ray.get(on(node, _node_ids).remote(wanted))
        for name in (n for n in wanted if have.get(n) != ids[n]):
            if name not in archives:
                archives[name] = _save(name)
            log(f"cluster: loading {name} on {label}")
            loaded = ray.get(on(node, _node_load).remote(name, archives[name]))
            if loaded != ids[name]:
                raise ClusterError(
                    f"{label}: {name} has ID {loaded} after loading, not {ids[name]}"
                )
            shipped.setdefault(label, []).append(name)
    return shipped


def _save(name: str) -> list[Any]:
    ray = ray_module()
    with tempfile.TemporaryDirectory(prefix="skillbench-image-") as tmp:
        archive = Path(tmp) / "image.tar"
        done = subprocess.run(
            _local("save", "-q", "--format", "docker-archive", "-o", str(archive), name),
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise ClusterError(f"podman save {name} failed: {done.stderr.strip()[-300:]}")
        chunks = []
        with archive.open("rb") as f:
            while chunk := f.read(CHUNK):
                chunks.append(ray.put(chunk))
        return chunks
