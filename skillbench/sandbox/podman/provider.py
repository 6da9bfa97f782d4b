"""The podman Sandbox provider: podman-py creates each container (limits, mounts, the
executor as PID 1) and its tmpfs workspace volume, removes what it made, and sweeps what dead
skillbench processes left; the sandbox itself, commands and files through the in-sandbox
executor, is container.py, the workspace volume workspace.py.

The measured podman facts this relies on (runc, init always on, `stop_signal` as an int, both
ulimits or neither, force removal with timeout 0) are in docs/sandboxes.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from podman import PodmanClient
from podman.api import prepare_body

from skillbench.sandbox.base import (
    AGENT,
    HANDOVER,
    HOMES,
    SKILLS_DIR,
    Mount,
    SandboxError,
    SandboxSpec,
    parse_size,
)
from skillbench.sandbox.inside import executor, handover, observer, portrelay, seal
from skillbench.sandbox.podman.channel import CHANNEL_ENV, Channel, channel_for, put_in
from skillbench.sandbox.podman.container import PodmanSandbox
from skillbench.sandbox.podman.pod import HOSTS, PodmanPod, remove_pod, start_pod
from skillbench.sandbox.podman.service import PodmanService
from skillbench.sandbox.podman.workspace import PodmanWorkspace, make_workspace, remove_volume
from skillbench.sandbox.runtime import runtime_dir
from skillbench.util.aio import to_the_end

LABEL = "skillbench"
OWNER_LABEL = "skillbench.owner"
PROVIDER_LABEL = "skillbench.provider"  # which provider in that process: what it removes
EXECUTOR_FILE = Path(executor.__file__)
HANDOVER_FILE = Path(handover.__file__)
PORTRELAY_FILE = Path(portrelay.__file__)
OBSERVER_FILE = Path(observer.__file__)
SEAL_FILE = Path(seal.__file__)
_IN_SANDBOX = "/opt/skillbench/executor.py"
PORTRELAY = "/opt/skillbench/portrelay.py"  # imported by the executor, beside it
OBSERVER = "/opt/skillbench/observer.py"  # the skill observer, likewise
SEAL = "/opt/skillbench/seal.py"  # what a sealed sandbox's commands start under, likewise
_SOCKET_DIR = "/run/skillbench"
_LOGS = "16m"  # /logs, for verifiers that write a reward file (Harbor's /logs/verifier)
_SKILLS = "256m"  # the api channel's /skills tmpfs: the staged skills, without their evals
_SHM = "64m"  # podman's default /dev/shm, counted in the memory limit like the other tmpfs
# A cgroup (cgroupfs path, e.g. /skillbench) every sandbox and its conmon go under, so their
# CPU and memory can be read (bench/cpu.py, bench/memory.py) or capped together.
CGROUP_ENV = "SKILLBENCH_CGROUP_PARENT"
_REMOVE_TRIES = 4
_AT_ONCE = 6.0  # s: a second Ctrl-C's removal; with the service's stop, within seconds


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _listed(fetch: Callable[[], list[Any]], until: float = 0.0) -> list[Any] | None:
    """A listing, retried: podman fails a whole list when an item in it is removed while it
    is listed (another skillbench's sweep, a run ending, this run's own removals): three
    tries, and on until the monotonic time `until`; None if that keeps happening."""
    tries = 0
    while True:
        try:
            return fetch()
        except Exception:
            tries += 1
            if tries >= 3 and time.monotonic() >= until:
                return None
            time.sleep(0.1)


def _owner_gone(labels: dict[str, str] | None, host: str) -> bool:
    """Labelled by a skillbench process on this host that no longer runs."""
    owner_host, _, pid = (labels or {}).get(OWNER_LABEL, "").rpartition(":")
    return owner_host == host and pid.isdigit() and not _pid_alive(int(pid))


class PodmanProvider:
    """Creates podman sandboxes through one podman service; sweeps our own leftovers."""

    def __init__(
        self,
        service: PodmanService | None = None,
        *,
        sweep: bool = True,
        channel: Channel | None = None,
    ):
        self.service = service or PodmanService.start_or_reuse()
        self._owns_service = service is None
        try:
            # local or api (channel.py); `channel` forces one as the environment variable does
            forced = {CHANNEL_ENV: channel} if channel else None
            self.channel = channel_for(self.service.connection, forced)
        except SandboxError:
            self.service.stop()  # only if ours: a configured one is left running
            raise
        self._client = self.service.client(120, max_pool_size=64)
        self._live: set[PodmanSandbox] = set()
        self._workspaces: set[PodmanWorkspace] = set()
        self._removed_workspaces: set[str] = set()  # names whose removal has begun
        self._pods: dict[str, PodmanPod] = {}
        # Creations run in worker threads that a cancelled await does not stop: the count
        # lets the final sweep wait for them, `_stopping` refuses new ones.
        self._creating = threading.Condition()
        self._in_flight = 0
        self._stopping = False
        self.labels = {LABEL: "1", OWNER_LABEL: _owner(), PROVIDER_LABEL: os.urandom(6).hex()}
        self.cgroup_parent = os.environ.get(CGROUP_ENV) or None
        if sweep:
            self.sweep()

    def client(self) -> PodmanClient:
        """The one client every thread shares: one connection pool to the service (its
        urllib3 pool is thread-safe), instead of a client and a pool per worker thread."""
        return self._client

    def sweep(self) -> int:
        """Remove containers left by skillbench processes on this host that are gone."""
        removed = 0
        host = socket.gethostname()
        ours = {"label": LABEL}
        # pods first: a pod's infra container cannot be removed on its own
        for pod in _listed(lambda: self.client().pods.list(filters=ours)) or []:
            if _owner_gone(pod.attrs.get("Labels"), host):
                with contextlib.suppress(Exception):  # another process's sweep took it first
                    remove_pod(self.client(), pod.name)
        for ctr in _listed(lambda: self.client().containers.list(all=True, filters=ours)) or []:
            if _owner_gone(ctr.labels, host):
                with contextlib.suppress(Exception):  # another process's sweep took it first
                    ctr.remove(force=True, timeout=0)
                    removed += 1
        for vol in _listed(lambda: self.client().volumes.list(filters=ours)) or []:
            if _owner_gone(vol.attrs.get("Labels"), host):
                with contextlib.suppress(Exception):  # still in use: the next sweep takes it
                    remove_volume(self.client(), vol.name)
        # and the host-side files of those processes: socket folders, service and ssh sockets
        for path in runtime_dir().iterdir():
            match = re.match(r"^(?:sb-|podman-|ssh-)(\d+)", path.name)
            if match and not _pid_alive(int(match.group(1))):
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
        return removed

    @contextlib.contextmanager
    def _creation(self) -> Iterator[None]:
        with self._creating:
            if self._stopping:
                raise SandboxError("the run is stopping: no new sandboxes")
            self._in_flight += 1
        try:
            yield
        finally:
            with self._creating:
                self._in_flight -= 1
                self._creating.notify_all()

    def remove_own(self, wait: float = 10.0) -> None:
        """Remove every pod, container and volume this provider made, whatever the state of
        the sandboxes that hold them: after the creations under way have finished, none
        start. Bounded by about `wait` seconds: an interrupted run ends within seconds
        (docs/trust.md), and what is left then is a dead owner's, for the next sweep."""
        deadline = time.monotonic() + wait
        with self._creating:
            self._stopping = True
            self._creating.wait_for(lambda: self._in_flight == 0, timeout=wait)
        mine = {"label": f"{PROVIDER_LABEL}={self.labels[PROVIDER_LABEL]}"}
        # a client of its own: the threads' clients may be mid-request
        with self.service.client(wait) as client:
            # Rounds until one lists nothing: a volume is "in use" while a cancelled close's
            # thread is still removing its container, and a listing can keep failing while
            # this run's own removals go on (None: not known to be empty).
            while not self._remove_round(client, mine, deadline):
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.05)

    @staticmethod
    def _remove_round(client: PodmanClient, mine: dict[str, str], until: float) -> bool:
        """One pass over pods, containers, volumes, in that order (a pod holds containers, a
        container its volume); True when all three listed empty."""
        pods = _listed(lambda: client.pods.list(filters=mine), until)
        for pod in pods or []:
            with contextlib.suppress(Exception):  # (gone meanwhile)
                remove_pod(client, pod.name)
        ctrs = _listed(lambda: client.containers.list(all=True, filters=mine), until)
        for ctr in ctrs or []:
            with contextlib.suppress(Exception):  # (gone meanwhile)
                ctr.remove(force=True, timeout=0)
        vols = _listed(lambda: client.volumes.list(filters=mine), until)
        for vol in vols or []:
            with contextlib.suppress(Exception):  # (gone meanwhile, or in use: the next round)
                remove_volume(client, vol.name)
        return pods == ctrs == vols == []

    def stop_now(self) -> None:
        """A second Ctrl-C: remove what this provider made and stop the service, at once. The
        removal runs on a thread of its own, given up after _AT_ONCE seconds (the process
        exits next; what is left is a dead owner's, for the next run's sweep): the user asked
        for now, and a podman call must not hold the exit."""

        def remove() -> None:
            with contextlib.suppress(Exception):  # (the process exits next: remove what can be)
                self.remove_own(_AT_ONCE)

        remover = threading.Thread(target=remove, daemon=True)
        remover.start()
        remover.join(_AT_ONCE + 1.0)
        for sandbox in list(self._live):
            if sandbox._sock_dir is not None:
                shutil.rmtree(sandbox._sock_dir, ignore_errors=True)
        for pod in list(self._pods.values()):
            shutil.rmtree(pod.folder, ignore_errors=True)
        if self._owns_service:
            self.service.stop(grace=2.0)

    async def create(self, spec: SandboxSpec) -> PodmanSandbox:
        """Create and start a container, then connect to its executor."""
        sock_dir = None
        if self.channel == "local":
            sock_dir = Path(tempfile.mkdtemp(prefix=f"sb-{os.getpid()}-", dir=runtime_dir()))
        try:
            ctr_id = await asyncio.to_thread(self._create_container, spec, sock_dir)
        except BaseException:
            if sock_dir is not None:
                shutil.rmtree(sock_dir, ignore_errors=True)
            raise
        relays = tuple(r for r in (spec.relay, spec.egress) if r is not None)
        skills = next((Path(m.source) for m in spec.mounts if m.target == SKILLS_DIR), None)
        # (a checker's relays are held until its handover: container.py)
        sandbox = PodmanSandbox(self, ctr_id, sock_dir, relays, spec.workdir, skills, spec.handover)
        self._live.add(sandbox)
        try:
            await sandbox.connect()
        except BaseException:
            await sandbox.close()
            raise
        return sandbox

    async def pod(self, spec: SandboxSpec) -> PodmanPod:
        """The arm's pod with `spec.services` running and healthy (pod.py)."""
        return await start_pod(self, spec)

    async def workspace(self, size: str, owner: str = AGENT) -> PodmanWorkspace:
        """A tmpfs volume of `size`, owned by `owner`, for /work (workspace.py)."""
        return await make_workspace(self, size, owner)

    def _create_container(self, spec: SandboxSpec, sock_dir: Path | None) -> str:
        with self._creation():  # (its image loaded into the service first, if need be)
            return self._create_started(self.service.ensured(spec), sock_dir)

    def _create_started(self, spec: SandboxSpec, sock_dir: Path | None) -> str:
        home = HOMES[spec.user]
        tmpfs = [("/tmp", spec.tmp, "1777"), (home, spec.home, "0700")]
        if spec.workspace is None:
            tmpfs.append((spec.workdir, spec.disk, "0755"))
        if spec.logs:
            tmpfs.append(("/logs", _LOGS, "1777"))
        # tmpfs pages are charged to the container's memory: add the caps on top, so a full
        # disk is ENOSPC rather than an OOM kill
        memory = sum(parse_size(x) for x in (spec.memory, spec.disk, spec.home, spec.tmp, _SHM))
        memory += parse_size(_LOGS) if spec.logs else 0
        host_files = [
            # (on the api channel /skills is filled after setup: a tmpfs, sync_skills)
            *(m for m in spec.mounts if sock_dir is not None or m.target != SKILLS_DIR),
            Mount(str(EXECUTOR_FILE), _IN_SANDBOX, read_only=True),
            Mount(str(HANDOVER_FILE), HANDOVER, read_only=True),
            Mount(str(PORTRELAY_FILE), PORTRELAY, read_only=True),
            Mount(str(OBSERVER_FILE), OBSERVER, read_only=True),
            Mount(str(SEAL_FILE), SEAL, read_only=True),
        ]
        if spec.pod is not None:  # the pod's hosts file naming the services
            host_files.append(Mount(self._pods[spec.pod].hosts, HOSTS, read_only=True))
        # the local channel: bind mounts, and the socket in a host folder; the api channel:
        # the same files copied in before start, and the executor's stdio attached
        binds: list[Mount] = []
        listen = ["--stdio"]
        if sock_dir is not None:
            binds = [*host_files, Mount(str(sock_dir), _SOCKET_DIR, read_only=False)]
            listen = ["--listen", f"{_SOCKET_DIR}/exec.sock"]
        elif any(m.target == SKILLS_DIR for m in spec.mounts):
            tmpfs.append((SKILLS_DIR, _SKILLS, "0755"))
            memory += parse_size(_SKILLS)
        kwargs: dict[str, Any] = dict(
            # The executor is PID 1: it reaps orphans (without an init, zombies use up the
            # pids limit) and cannot be killed from inside, not even by `kill -9 -1`.
            # the executor replaces the image's own ENTRYPOINT (one that wrapped it could
            # keep it from starting, or run as it pleases before it)
            entrypoint=["python3", "-u", _IN_SANDBOX],
            command=[
                *listen,
                *("--user", spec.user),
                *("--workdir", spec.workdir),
                *(["--seal"] if spec.sealed else []),
                *(
                    arg
                    for r in (spec.relay, spec.egress)
                    if r is not None
                    for arg in ("--relay", str(r.port))
                ),
            ],
            init=False,
            working_dir=spec.workdir,
            labels={**self.labels, **spec.labels},
            mem_limit=memory,
            # nothing the agent writes outside /work, HOME and /tmp; no setuid escalation
            # (a writable layer only for the trusted root scripts of a container the agent
            # never touched: SandboxSpec.writable_root, docs/trust.md)
            read_only=not spec.writable_root,
            read_write_tmpfs=False,
            no_new_privileges=True,
            pids_limit=spec.pids,
            nano_cpus=int(spec.cpus * 1e9),
            ulimits=[  # both or neither: nofile alone resets nproc and start fails
                {"Name": "nofile", "Soft": spec.nofile, "Hard": spec.nofile},
                {"Name": "nproc", "Soft": spec.nproc, "Hard": spec.nproc},
            ],
            stop_signal=9,
            environment=dict(spec.env),
            mounts=[
                # absolute: the podman service resolves a relative source against its own cwd
                *(
                    {
                        "type": "bind",
                        "source": os.path.abspath(m.source),
                        "target": m.target,
                        "read_only": m.read_only,
                    }
                    for m in binds
                ),
                *(
                    {"type": "tmpfs", "source": "tmpfs", "target": t, "size": n, "mode": m}
                    for t, n, m in tmpfs
                ),
            ],
        )
        if spec.workspace is not None:
            # (a volume mounted over a folder of the image starts with its files: podman
            # copies them in, so an image's /app seeds a case whose workdir is /app)
            kwargs["volumes"] = {spec.workspace: {"bind": spec.workdir, "mode": "rw"}}
        for volume, target in spec.shared.items():  # the pod's, shared with its services
            kwargs.setdefault("volumes", {})[volume] = {"bind": target, "mode": "rw"}
        if spec.pod is not None:
            # the pod's network (loopback only) and its hosts file naming the services
            kwargs["pod"] = spec.pod
            # (copied in on the api channel, where podman's own would cover it)
            kwargs["use_image_hosts"] = sock_dir is None
        elif not spec.network:
            kwargs["network_mode"] = "none"
        if self.cgroup_parent:
            kwargs["cgroup_parent"] = self.cgroup_parent
        if sock_dir is None:
            # stdin held open for the attach; no log: conmon would copy every byte to disk
            kwargs.update(stdin_open=True, log_config={"Type": "none", "Config": {}})
        api = self.client().api
        try:
            # podman-py's own translation of the keywords into a spec, posted without the
            # inspect `containers.create` follows it with (an inspect runs `runc state`)
            payload = self.client().containers._render_payload({"image": spec.image, **kwargs})
            created = api.post(
                "/containers/create",
                headers={"content-type": "application/json"},
                data=prepare_body(payload),
            )
            created.raise_for_status()
            ctr_id = str(created.json()["Id"])
        except Exception as exc:
            raise SandboxError(f"could not create a sandbox from {spec.image}: {exc}") from exc
        if spec.workspace in self._removed_workspaces:
            # Its workspace was removed while this was created (an interrupted run's close):
            # podman then makes a volume of that name anew, unlabelled, for no one to remove.
            with contextlib.suppress(Exception):
                self.remove_container(ctr_id)
                remove_volume(self.client(), spec.workspace)
            raise SandboxError(f"workspace {spec.workspace} was removed meanwhile")
        try:
            if sock_dir is None:  # the api channel's stand-in for bind mounts
                put_in(api, ctr_id, host_files)
            api.post(f"/containers/{ctr_id}/start").raise_for_status()
        except Exception as exc:
            # (a failed start may leave nothing to remove: podman's 404 then is an OSError
            # that would read as a run-folder write; the sweep gets any leftover)
            with contextlib.suppress(Exception):
                self.remove_container(ctr_id)
            raise SandboxError(f"could not start a sandbox from {spec.image}: {exc}") from exc
        return ctr_id

    def stop_container(self, ctr_id: str) -> None:
        """Kill a container and return once its PID 1 is gone (podman checks), keeping it."""
        try:
            self.client().api.post(
                f"/containers/{ctr_id}/stop", params={"timeout": 0}
            ).raise_for_status()
        except Exception as exc:
            raise SandboxError(f"could not stop sandbox {ctr_id[:12]}: {exc}") from exc

    def remove_container(self, ctr_id: str) -> None:
        """Kill and remove a container in one request (no inspect first); gone already is
        fine. A container whose processes just ended (Sandbox.stop) may still be "running"
        to podman until its exit is noticed, and podman 4.3 then fails the removal ("could
        not be stopped ... state improper: stopped"): it is asked again, once that is seen."""
        for attempt in range(_REMOVE_TRIES):
            response = self.client().api.delete(
                f"/containers/{ctr_id}", params={"force": True, "timeout": 0, "ignore": True}
            )
            if response.ok or attempt == _REMOVE_TRIES - 1:
                break
            time.sleep(0.02 * (attempt + 1))
        response.raise_for_status()
        failed = [r["Err"] for r in response.json() if r.get("Err")]  # one report per container
        if failed:
            raise SandboxError(f"could not remove container {ctr_id[:12]}: {failed[0]}")

    async def aclose(self) -> None:
        """Close every sandbox still open, sweep up what an interrupted creation made, then
        stop the service if we started it; to its end even when cancelled meanwhile."""
        await to_the_end(self._close())

    async def _close(self) -> None:
        try:
            await asyncio.gather(*(s.close() for s in list(self._live)), return_exceptions=True)
            await asyncio.gather(
                *(p.close() for p in list(self._pods.values())), return_exceptions=True
            )
            await asyncio.gather(
                *(w.close() for w in list(self._workspaces)), return_exceptions=True
            )
            await asyncio.to_thread(self.remove_own)
        finally:
            self._client.close()
            if self._owns_service:
                self.service.stop()
