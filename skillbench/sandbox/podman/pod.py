"""A case's services as a podman pod beside one arm (docs/formats.md): the pod's network namespace
has only loopback (`--network none`), every container of the arm joins it (the services, the
agent's sandbox, then its checker), and a hosts file of our own, mounted read-only in each,
names the services at 127.0.0.1. Each arm gets its own pod, so no arm reaches another's
services, and no service reaches anything outside its pod.

Measured on podman 4.3: the pod's infra container is built locally from catatonit
(scripts/setup-host.sh installs it); `--add-host` on a pod with no network never reaches
/etc/hosts, hence the mounted file; a pod removed without a kill first waits 5 s for its
containers to stop. A health probe is the service's own podman healthcheck, run on demand
(no timer): a REST exec would leave two conmons alive for `exit_command_delay` in the pod's
cgroup, and the pod's removal waits for them (~3.5 s an arm, against ~0.1 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillbench.evals.services import VOLUME_SIZE, Service
from skillbench.sandbox.base import Mount, SandboxError, SandboxSpec, parse_size
from skillbench.sandbox.podman.channel import copy_in
from skillbench.sandbox.podman.workspace import remove_volume
from skillbench.sandbox.runtime import runtime_dir

if TYPE_CHECKING:
    from skillbench.sandbox.podman.host import PodmanHost

HOSTS = "/etc/hosts"
_PROBE_EVERY = 0.25  # seconds between health probes
_PROBE_GRACE = 5.0  # seconds the last probe may take past the deadline
_TAIL = 300  # characters of a probe's or a service's output kept in a reason


class PodmanPod:
    """One arm's pod: its services, and the hosts file its containers mount."""

    def __init__(self, provider: PodmanHost, name: str, folder: Path):
        self.provider = provider
        self.name = name
        self.folder = folder  # holds the hosts file; removed with the pod
        self.volumes: dict[str, str] = {}  # the case's volume -> its podman volume
        self._closed = False

    @property
    def hosts(self) -> str:
        return str(self.folder / "hosts")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.to_thread(remove_pod, self.provider.client(), self.name)
            for volume in self.volumes.values():  # (their containers are gone with the pod)
                await asyncio.to_thread(remove_volume, self.provider.client(), volume)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.provider._pods.pop(self.name, None)


def remove_pod(client: Any, name: str) -> None:
    """Kill, then remove, a pod with every container in it; gone already is fine."""
    try:
        pod = client.pods.get(name)
        with contextlib.suppress(Exception):  # (nothing running in it)
            pod.kill(signal=9)
        pod.remove(force=True)
    except Exception as exc:
        if "no such pod" not in str(exc).lower() and "404" not in str(exc):
            raise SandboxError(f"could not remove pod {name}: {exc}") from exc


def hosts_file(services: tuple[Service, ...]) -> str:
    names = " ".join(s.name for s in services)
    return f"127.0.0.1\tlocalhost {names}\n::1\tlocalhost\n"


async def start_pod(provider: PodmanHost, spec: SandboxSpec) -> PodmanPod:
    """Create the pod and start its services in order, each healthy before the next."""
    folder = Path(tempfile.mkdtemp(prefix=f"sb-{os.getpid()}-pod-", dir=runtime_dir()))
    (folder / "hosts").write_text(hosts_file(spec.services))
    (folder / "hosts").chmod(0o644)
    name = f"skillbench-pod-{os.getpid()}-{os.urandom(4).hex()}"
    labels = {**provider.labels, **spec.labels}

    def create() -> None:
        with provider._creation():
            try:
                # only the network: an IPC namespace shared too (podman's default, which the
                # API applies unless told with its own field name, not the CLI's `share`)
                # would carry the agent's /dev/shm, mqueues and SysV IPC into the checker
                provider.client().pods.create(
                    name, labels=labels, netns={"nsmode": "none"}, shared_namespaces=["net"]
                )
            except Exception as exc:
                raise SandboxError(
                    f"could not create a pod for the case's services: {exc}"
                ) from exc

    try:
        await asyncio.to_thread(create)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    pod = PodmanPod(provider, name, folder)
    provider._pods[name] = pod
    try:
        for volume in volume_names(spec):
            pod.volumes[volume] = await asyncio.to_thread(
                _make_volume, provider, spec, name, volume
            )
        for service in spec.services:
            ctr_id = await asyncio.to_thread(_start_service, provider, spec, pod, service)
            await _healthy(provider, ctr_id, service)
    except BaseException:
        await pod.close()
        raise
    return pod


def volume_names(spec: SandboxSpec) -> list[str]:
    """Every volume of the case: those it lists and those its services mount."""
    names = [v.name for v in spec.volumes]
    names += [n for s in spec.services for n in s.volumes]
    return list(dict.fromkeys(names))


def _make_volume(provider: PodmanHost, spec: SandboxSpec, pod: str, volume: str) -> str:
    """A fresh tmpfs volume for one of the case's volumes (compose's bind mount or named
    volume): never a host folder. Anyone may write it (sticky, as /tmp): the services run as
    their images' users, the agent as `agent`, the checker as `checker`."""
    name = f"{pod}-vol-{volume}"
    blocks = max(1, parse_size(VOLUME_SIZE) // os.sysconf("SC_PAGE_SIZE"))
    options = {
        "type": "tmpfs",
        "device": "tmpfs",
        "o": f"nr_blocks={blocks},mode=1777,nosuid,nodev",
    }
    with provider._creation():
        try:
            provider.client().volumes.create(
                name, driver="local", driver_opts=options, labels={**provider.labels, **spec.labels}
            )
        except Exception as exc:
            raise SandboxError(f"could not create the case's volume {volume!r}: {exc}") from exc
    return name


def _start_service(
    provider: PodmanHost, spec: SandboxSpec, pod: PodmanPod, service: Service
) -> str:
    image = service.image or spec.image
    kwargs: dict[str, Any] = dict(
        pod=pod.name,
        name=f"{pod.name}-{service.name}",
        labels={**provider.labels, **spec.labels},
        environment=dict(service.env),
        # the arm's limits (a service is the case's, not the agent's, but shares the machine)
        mem_limit=parse_size(spec.memory),
        pids_limit=spec.pids,
        nano_cpus=int(spec.cpus * 1e9),
        ulimits=[  # both or neither: nofile alone resets nproc and start fails
            {"Name": "nofile", "Soft": spec.nofile, "Hard": spec.nofile},
            {"Name": "nproc", "Soft": spec.nproc, "Hard": spec.nproc},
        ],
        no_new_privileges=True,
        stop_signal=9,
    )
    if service.command:
        kwargs["command"] = list(service.command)
    if service.volumes:  # the arm's own volumes, shared as the compose file shares them
        kwargs["volumes"] = {
            pod.volumes[n]: {"bind": path, "mode": "rw"} for n, path in service.volumes.items()
        }
    hosts = Mount(pod.hosts, HOSTS, read_only=True)
    if provider.channel == "local":
        kwargs["mounts"] = [
            {"type": "bind", "source": hosts.source, "target": HOSTS, "read_only": True}
        ]
    else:  # copied in before the start, where podman's own hosts file would cover it
        kwargs["use_image_hosts"] = True
    if service.healthcheck:
        # run only when _probe asks (Interval 0: no timer), failing at its first failure
        timeout = max(service.health_timeout, _PROBE_GRACE)
        kwargs["healthcheck"] = {
            "Test": ["CMD", *service.healthcheck],
            "Interval": 0,
            "Retries": 1,
            "Timeout": int(timeout * 1e9),
        }
    with provider._creation():
        try:
            provider.service.ensure_image(image)
            ctr = provider.client().containers.create(image, **kwargs)
            # the case's folders it runs from (skill-optimizer's mcp/), copied, never mounted
            copied = [Mount(src, dest, read_only=True) for dest, src in service.files.items()]
            if provider.channel == "api":
                copied.append(hosts)
            if copied and not ctr.put_archive("/", copy_in(copied, listed=False)):
                raise SandboxError(f"could not copy {', '.join(m.target for m in copied)} in")
            ctr.start()
        except Exception as exc:
            raise SandboxError(
                f"service {service.name!r} could not start from {image}: {exc}"
            ) from exc
        return str(ctr.id)


async def _healthy(provider: PodmanHost, ctr_id: str, service: Service) -> None:
    """Wait until the service's health check passes (or, without one, it is running);
    SandboxError with the last probe's and the service's own output when it does not."""
    deadline = time.monotonic() + service.health_timeout
    last = "no probe finished"
    while True:
        await _running(provider, ctr_id, service)
        if not service.healthcheck:
            return
        left = deadline - time.monotonic()
        try:
            healthy, out = await asyncio.wait_for(
                # (a probe started near the deadline still gets its grace: a slow machine
                # must not turn "unhealthy" into "did not answer")
                asyncio.to_thread(_probe, provider, ctr_id),
                max(left, _PROBE_GRACE),
            )
            if healthy:
                return
            last = f"last probe failed: {out[-_TAIL:]}" if out else "last probe failed"

        except TimeoutError:
            last = "the last probe did not finish"
        except Exception as exc:  # (e.g. it stopped as the probe began: the next look says so)
            last = f"the last probe could not run: {exc}"
        if time.monotonic() + _PROBE_EVERY > deadline:
            await _running(provider, ctr_id, service)  # (a service that stopped says so)
            logs = await asyncio.to_thread(_logs, provider, ctr_id)
            raise SandboxError(
                f"service {service.name!r} was not healthy within "
                f"{service.health_timeout:g} s ({last}); its output: {logs or 'none'}"
            )
        await asyncio.sleep(_PROBE_EVERY)


async def _running(provider: PodmanHost, ctr_id: str, service: Service) -> None:
    state = await asyncio.to_thread(_state, provider, ctr_id)
    if state != "running":
        logs = await asyncio.to_thread(_logs, provider, ctr_id)
        raise SandboxError(
            f"service {service.name!r} stopped ({state}) before it was healthy; "
            f"its output: {logs or 'none'}"
        )


def _state(provider: PodmanHost, ctr_id: str) -> str:
    return str(provider.client().containers.get(ctr_id).status)


def _logs(provider: PodmanHost, ctr_id: str) -> str:
    ctr = provider.client().containers.get(ctr_id)
    found = ctr.logs(stdout=True, stderr=True, tail=5)
    logs = (found if isinstance(found, bytes) else b"".join(found)).decode("utf-8", "replace")
    return " ".join(logs.split())[-_TAIL:]


def _probe(provider: PodmanHost, ctr_id: str) -> tuple[bool, str]:
    """Run the service's healthcheck once: healthy, and else what the probe printed (podman
    keeps it in the container's health log, not in the answer, and reports every failing
    exit code as 1)."""
    api = provider.client().api
    answer = api.get(f"/containers/{ctr_id}/healthcheck")
    answer.raise_for_status()
    if answer.json().get("Status") == "healthy":
        return True, ""
    state = api.get(f"/containers/{ctr_id}/json").json().get("State", {})
    log = (state.get("Health") or state.get("Healthcheck") or {}).get("Log") or [{}]
    return False, " ".join(str(log[-1].get("Output", "")).split())
