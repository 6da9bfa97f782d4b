"""A second podman service on this machine, reached only over ssh:// (issue 28's test bed).

It has its own storage root and run root, listens on a unix socket, and runs in a mount
namespace of its own where /tmp and /work are empty tmpfs: a host folder skillbench would
bind-mount (its runtime folder, the checkout's executor.py, a run's workspace) is not there
for it, so the test fails where the API-only path would not. The only way in is an sshd this
fixture starts on a free loopback port, with its own config, host key and authorized key
(both made with ssh-keygen here); skillbench gets `CONTAINER_HOST=ssh://root@127.0.0.1:PORT
/…/podman.sock`, `CONTAINER_SSHKEY` and a HOME whose known_hosts holds that host key.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from podman import PodmanClient

SSHD = "/usr/sbin/sshd"
READY = 60.0  # a loaded machine starts podman slowly


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "skillbench-test", "-f", str(path)],
        check=True,
    )


class SshPodman:
    """start() the service and its sshd; stop() tears down containers, service, sshd."""

    def __init__(self) -> None:
        # /var/tmp: outside the /tmp the service's namespace hides, and short, since podman
        # refuses a runroot over 50 characters
        self.root = Path(tempfile.mkdtemp(prefix="sb-ssh-", dir="/var/tmp"))
        self.sock = self.root / "podman.sock"
        # and its own libpod state (its events log, locks): by default /run/libpod, shared
        self.store = [
            *("--root", str(self.root / "storage"), "--runroot", str(self.root / "run")),
            *("--tmpdir", str(self.root / "libpod")),
        ]
        self.home = self.root / "home"
        self.key = self.root / "client_key"
        self.port = free_port()
        self.podman: subprocess.Popen[bytes] | None = None
        self.sshd: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ssh://root@127.0.0.1:{self.port}{self.sock}"

    def env(self) -> dict[str, str]:
        """What points skillbench (and nothing else) at this service."""
        return {
            "CONTAINER_HOST": self.url,
            "CONTAINER_SSHKEY": str(self.key),
            "HOME": str(self.home),
        }

    def direct(self) -> PodmanClient:
        """The test's own way in, for set-up and teardown only (never skillbench's)."""
        return PodmanClient(base_url=f"unix://{self.sock}", timeout=120)

    def start(self) -> SshPodman:
        if not os.access(SSHD, os.X_OK):
            raise RuntimeError(f"{SSHD} is missing: run scripts/setup-host.sh (openssh-server)")
        self._start_podman()
        self._start_sshd()
        return self

    def _start_podman(self) -> None:
        hide = "mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /work"
        service = ["podman", *self.store, "system", "service", "--time=0", f"unix://{self.sock}"]
        self.podman = subprocess.Popen(
            [
                *("unshare", "--mount", "--propagation", "private", "sh", "-c"),
                f'{hide} && exec "$@"',
                "sh",
                *service,
            ],
            stdin=subprocess.DEVNULL,
            stdout=(self.root / "podman.log").open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd="/",
        )
        deadline = time.monotonic() + READY
        while True:
            assert self.podman.poll() is None, (self.root / "podman.log").read_text()[-2000:]
            if self.sock.exists():
                try:
                    with self.direct() as client:
                        if client.ping():
                            return
                except Exception:
                    pass
            assert time.monotonic() < deadline, "the ssh-only podman service did not come up"
            time.sleep(0.1)

    def _start_sshd(self) -> None:
        host_key = self.root / "host_key"
        _keygen(host_key)
        _keygen(self.key)
        authorized = self.root / "authorized_keys"
        shutil.copy(self.key.with_suffix(".pub"), authorized)
        config = self.root / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {host_key}",
                    f"PidFile {self.root / 'sshd.pid'}",
                    f"AuthorizedKeysFile {authorized}",
                    "AllowUsers root",
                    "PermitRootLogin prohibit-password",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",  # (the files are in a temp folder)
                    "AllowStreamLocalForwarding yes",
                    "AllowTcpForwarding local",  # (sshd permits socket forwards only with it),
                    "X11Forwarding no",
                    "PermitTTY no",
                    "LogLevel VERBOSE",
                    "",
                ]
            )
        )
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        self.sshd = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.root / "sshd.log").open("wb"),
            start_new_session=True,
        )
        deadline = time.monotonic() + READY
        while True:
            assert self.sshd.poll() is None, (self.root / "sshd.log").read_text()[-2000:]
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            assert time.monotonic() < deadline, "the test's sshd did not listen"
            time.sleep(0.05)
        public = host_key.with_suffix(".pub").read_text().split()
        (self.home / ".ssh").mkdir(parents=True)
        (self.home / ".ssh" / "known_hosts").write_text(
            f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n"
        )

    def stop(self) -> None:
        """Containers in its storage first (each has its own conmon and would outlive the
        service), then the service, then sshd and the connections it serves."""
        if self.podman is not None and self.podman.poll() is None:
            try:
                with self.direct() as client:
                    for pod in client.pods.list():
                        pod.remove(force=True)
                    for ctr in client.containers.list(all=True):
                        ctr.remove(force=True, timeout=0)
                    for volume in client.volumes.list():
                        volume.remove(force=True)
            except Exception as exc:  # (still stop the rest; the leftovers die with the ns)
                print(f"ssh_service teardown: {exc}")
            _stop_group(self.podman)
        if self.sshd is not None:
            # each connection has its own sshd child, in its own session: end those too
            children = _children_of(self.sshd.pid)
            _stop_group(self.sshd)
            for pid in children:
                _kill(pid)
        shutil.rmtree(self.root, ignore_errors=True)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _children_of(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(proc.name))
    return found


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
