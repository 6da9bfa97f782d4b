"""A cluster on this one machine: a Ray head (no slots) and worker nodes, each with its own
podman service, storage and socket — so `cluster prepare` has to ship the images, as it does
to real machines. What the tests and bench/cluster.py run on, and a way to try scale-out
without a second machine."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skillbench.cluster.connect import SLOT
from skillbench.sandbox.podman.connection import URL_ENV
from skillbench.sandbox.podman.reach import ping

RAY = str(Path(sys.executable).parent / "ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_HEAD_ENV = "SKILLBENCH_LOCAL_CLUSTER"  # marks the head's processes: stop() ends only those


def _env() -> dict[str, str]:
    """What the Ray processes start with: never a provider key."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


def _marked(mark: str) -> list[int]:
    """The processes whose environment holds `mark` (VAR=value): what one node or cluster
    started, and nothing of another cluster on the same machine."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if mark.encode() in (proc / "environ").read_bytes().split(b"\0"):
                    found.append(int(proc.name))
    return found


class Node:
    """A worker node: its own podman service and storage, and its raylet."""

    def __init__(self, root: Path, name: str):
        self.name = name
        self.root = root / name
        self.root.mkdir(parents=True)
        self.url = f"unix://{self.root}/podman.sock"
        # (podman refuses a runroot longer than 50 characters)
        self.runroot = tempfile.mkdtemp(prefix=f"sb-{name}-", dir="/tmp")
        self.store = ["--root", str(self.root / "storage"), "--runroot", self.runroot]
        store = self.store
        self.podman = subprocess.Popen(
            ["podman", *store, "system", "service", "--time=0", self.url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(600):  # (a minute: a loaded machine starts podman slowly)
            if ping(self.url):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"the podman service of {name} did not come up")

    def join(self, address: str, slots: int) -> None:
        subprocess.run(
            [
                RAY,
                "start",
                f"--address={address}",
                f"--num-cpus={slots}",
                "--disable-usage-stats",
                f"--resources={json.dumps({SLOT: slots})}",
            ],
            env={**_env(), URL_ENV: self.url},
            check=True,
            capture_output=True,
        )

    def processes(self) -> list[int]:
        """The node's Ray processes: those started with its podman service in their env."""
        return _marked(f"{URL_ENV}={self.url}")

    def kill(self) -> None:
        """The node is lost: every Ray process of it killed at once."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        self.kill()
        # its containers outlive its service (each has its own conmon): remove them first
        subprocess.run(
            ["podman", *self.store, "rm", "-a", "-f", "-t", "0"], capture_output=True, timeout=120
        )
        os.killpg(self.podman.pid, signal.SIGTERM)
        self.podman.wait(timeout=30)
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        for target in [*mounts, str(self.root / "storage/overlay")]:  # its layers, its store
            if target.startswith((str(self.root), self.runroot)):
                subprocess.run(["umount", "-l", target], capture_output=True)
        shutil.rmtree(self.runroot, ignore_errors=True)


class LocalCluster:
    """start() a head and `workers` nodes under `root`; stop() them all."""

    def __init__(self, root: Path, workers: int = 2, slots: int = 2):
        self.root, self.workers, self.slots = root, workers, slots
        self.address = f"127.0.0.1:{free_port()}"
        self.nodes: list[Node] = []
        # Ray's sockets live under its temp folder, and AF_UNIX paths end at 107 bytes
        self.temp = tempfile.mkdtemp(prefix="sb-ray-", dir="/tmp")

    def start(self) -> LocalCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                RAY,
                "start",
                "--head",
                f"--port={self.address.rsplit(':', 1)[1]}",
                "--num-cpus=1",
                "--include-dashboard=false",
                "--disable-usage-stats",
                f"--temp-dir={self.temp}",
                f"--resources={json.dumps({SLOT: 0})}",
            ],
            env={**_env(), _HEAD_ENV: self.temp},
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"ray start --head failed: {done.stderr[-500:]}")
        for i in range(self.workers):
            node = Node(self.root, f"w{i + 1}")
            self.nodes.append(node)
            node.join(self.address, self.slots)
        return self

    def stop(self) -> None:
        import ray

        ray.shutdown()  # (before the nodes go: no "raylet terminated" noise in the driver)
        for node in self.nodes:
            node.stop()
        # not `ray stop --force`: it kills every Ray process of the machine, another
        # cluster's too (a second test run's driver then exits when its GCS goes)
        for pid in _marked(f"{_HEAD_ENV}={self.temp}"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.temp, ignore_errors=True)
