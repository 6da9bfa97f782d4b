"""An ssh:// podman service, reached through one `ssh -N -L` tunnel per connection.

podman-py's own ssh adapter is not used: it starts an ssh child per pooled HTTP connection
(0.2 s each, measured; up to 64 of them for our pool), with host key checking turned off (it
adds any host to ~/.ssh/known_hosts), and waits up to 300 s for a tunnel whose ssh already
failed, saying nothing of why. So skillbench starts OpenSSH itself, once per connection,
forwarding a unix socket of its own to the remote podman socket; every client, pooled
connection and attach stream then goes over that one ssh connection as a plain unix socket
(a ping through it: 1 ms), multiplexed by ssh.

The ssh child runs in BatchMode (never a prompt), with host keys checked against known_hosts
(`$HOME/.ssh/known_hosts`, as podman reads it, and ssh's own): an unknown host is refused.
The URL's parts are checked before ssh sees them, and handed over as option arguments after
`--`, so a CONTAINER_HOST like `ssh://-oProxyCommand=…@host` runs nothing.
"""

from __future__ import annotations

import atexit
import itertools
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from skillbench.sandbox.base import SandboxError
from skillbench.sandbox.podman.connection import Connection, shown

READY_TIMEOUT = 20.0  # ssh's ConnectTimeout (10 s) plus the key exchange on a loaded machine
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:.]+\]")
_PATH = re.compile(r"/[A-Za-z0-9_./@+-]{1,200}")  # no ':' (it splits -L) and no spaces
_counter = itertools.count()
_lock = threading.Lock()
_open: dict[tuple[str, str], Tunnel] = {}


class SshTarget:
    """The parts of an ssh:// URL, each checked to be what it claims to be."""

    def __init__(self, url: str, source: str):
        parts = urlsplit(url)
        where = f"{source}: {shown(url)}"
        try:
            port = parts.port
        except ValueError:
            raise SandboxError(f"{where}: the port is not a number; fix {source}") from None
        if parts.password is not None:
            raise SandboxError(
                f"{where}: a password in the URL is not used (ssh runs in batch mode); "
                f"remove it and name a key with CONTAINER_SSHKEY"
            )
        user = unquote(parts.username or "")
        host = parts.netloc.rpartition("@")[2]
        host = host.rsplit(":", 1)[0] if port is not None else host
        if user and not _USER.fullmatch(user):
            raise SandboxError(f"{where}: {user!r} is not a user name; fix {source}")
        if not _HOST.fullmatch(host):
            raise SandboxError(f"{where}: {host!r} is not a host name or address; fix {source}")
        if not _PATH.fullmatch(parts.path):
            raise SandboxError(
                f"{where}: the remote socket path {parts.path!r} is missing or has characters "
                f"ssh cannot forward; fix {source} (ssh://USER@HOST[:PORT]/path/to/podman.sock)"
            )
        self.user, self.host, self.port, self.path = user, host.strip("[]"), port, parts.path
        self.source = source

    def label(self) -> str:
        at = f"{self.user}@" if self.user else ""
        return f"{at}{self.host}" + (f":{self.port}" if self.port else "")


def _known_hosts() -> str:
    """podman reads `$HOME/.ssh/known_hosts`; ssh reads the passwd home's. Both, in that
    order (ssh splits the list at spaces, so a $HOME with one is left to ssh's default)."""
    files = ["~/.ssh/known_hosts"]
    home = os.environ.get("HOME", "")
    if home and " " not in home:
        files.insert(0, str(Path(home) / ".ssh" / "known_hosts"))
    return " ".join(dict.fromkeys(files))


def _argv(target: SshTarget, identity: str, local: Path) -> list[str]:
    argv = [
        *("ssh", "-N", "-T", "-n"),
        *("-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"),
        *("-o", f"UserKnownHostsFile={_known_hosts()}"),
        *("-o", "ExitOnForwardFailure=yes", "-o", "ConnectTimeout=10"),
        *("-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3"),
        *("-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", "StreamLocalBindUnlink=yes"),
    ]
    if identity:
        argv += ["-i", str(Path(identity).expanduser()), "-o", "IdentitiesOnly=yes"]
    if target.user:
        argv += ["-l", target.user]
    if target.port:
        argv += ["-p", str(target.port)]
    return [*argv, "-L", f"{local}:{target.path}", "--", target.host]


def _refusal(target: SshTarget, identity: str, said: str) -> str:
    """The one line for an ssh that exited: which of the usual causes, and what to do."""
    src, who = target.source, target.label()
    last = said.strip().splitlines()[-1] if said.strip() else "no message"
    low = said.lower()
    if "permission denied" in low:
        key = f"the key {identity}" if identity else "ssh's default keys (no CONTAINER_SSHKEY)"
        return (
            f"{src}: ssh to {who} refused {key}; put its .pub line in the remote user's "
            "~/.ssh/authorized_keys, or point CONTAINER_SSHKEY at the key that is there"
        )
    if "host key verification failed" in low or "host key for" in low:
        return (
            f"{src}: the host key of {who} is not in known_hosts (or has changed); check and "
            f"accept it once with `ssh{f' -p {target.port}' if target.port else ''} "
            f"{who.rsplit(':', 1)[0] if target.port else who}` (it adds the key to "
            "~/.ssh/known_hosts), then retry"
        )
    if "no such file" in low and identity:
        return f"CONTAINER_SSHKEY: the key {identity} does not exist; point it at your key"
    if any(
        m in low
        for m in (
            "connection refused",
            "could not resolve",
            "no route",
            "timed out",
            "unreachable",
            "connection closed",
            "connection reset",
        )
    ):
        return (
            f"{src}: cannot reach {who} over ssh ({last}); check the host and port in {src} "
            "and that sshd runs there"
        )
    return f"{src}: ssh to {who} failed ({last}); check {src}"


class Tunnel:
    """One running `ssh -N -L local:remote`; `url` is the local end, a unix:// URL."""

    def __init__(self, url: str, source: str, identity: str, local: Path | None = None):
        # (service.py uses this module: imported here, not at the top)
        from skillbench.sandbox.runtime import die_with_parent, runtime_dir

        self.target = SshTarget(url, source)
        if shutil.which("ssh") is None:
            raise SandboxError(
                f"{source} names an ssh:// service, but no `ssh` client is installed; "
                "install OpenSSH's client (apt-get install openssh-client; on Windows the "
                "OpenSSH Client feature)"
            )
        if identity and not Path(identity).expanduser().is_file():
            raise SandboxError(
                f"CONTAINER_SSHKEY: the key {identity} does not exist; point it at your key"
            )
        self.identity = identity
        self.local = local or runtime_dir() / f"ssh-{os.getpid()}-{next(_counter)}.sock"
        self.url = f"unix://{self.local}"
        self._log = self.local.with_suffix(".err").open("w+b")
        main = threading.current_thread() is threading.main_thread()
        self.process = subprocess.Popen(
            _argv(self.target, identity, self.local),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            start_new_session=True,  # a Ctrl-C to skillbench must not cut it mid-cleanup
            # Linux ends it with the thread that started it: only the main thread's is tied
            preexec_fn=die_with_parent if main else None,
        )
        deadline = time.monotonic() + READY_TIMEOUT
        while not self.local.exists():
            if self.process.poll() is not None:
                said = self.said()
                self.close()
                raise SandboxError(_refusal(self.target, identity, said))
            if time.monotonic() > deadline:
                self.close()
                raise SandboxError(
                    f"{source}: ssh to {self.target.label()} did not connect within "
                    f"{READY_TIMEOUT:.0f} s; check the host and that sshd answers there"
                )
            time.sleep(0.02)

    def said(self) -> str:
        """What ssh wrote to stderr so far."""
        self._log.flush()
        return self.local.with_suffix(".err").read_bytes().decode(errors="replace")

    def unanswered(self) -> str:
        """The line for a tunnel that is up but behind which no podman answers."""
        time.sleep(0.2)  # ssh logs a refused channel a moment after it closes it
        said = self.said().lower()
        src = self.target.source
        if self.process.poll() is not None:
            return _refusal(self.target, self.identity, self.said())
        if "open failed" in said or "connect failed" in said or "no such file" in said:
            return (
                f"{src}: ssh to {self.target.label()} works, but no podman socket answers at "
                f"{self.target.path}; fix the path in {src} (on the remote host `podman info "
                "--format '{{.Host.RemoteSocket.Path}}'` prints it) and start `podman system "
                "service` there"
            )
        return (
            f"{src}: ssh to {self.target.label()} works, but the podman service at "
            f"{self.target.path} does not answer; start it (`podman system service --time=0` "
            "or `podman machine start`)"
        )

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        self.local.unlink(missing_ok=True)
        self.local.with_suffix(".err").unlink(missing_ok=True)


def tunnel(connection: Connection) -> Tunnel:
    """The process's tunnel to `url`, opened on first use; reopened at the same local path
    if its ssh died, so the clients made before reconnect through it."""
    url, source, identity = connection.url, connection.source, connection.identity
    with _lock:
        found = _open.pop((url, identity), None)
        if found is not None and found.process.poll() is None:
            _open[(url, identity)] = found
            return found
        if found is not None:
            found.close()
        made = Tunnel(url, source, identity, found.local if found else None)
        _open[(url, identity)] = made
        return made


@atexit.register
def close_all() -> None:
    """Close every tunnel this process opened (at exit; tests before they stop the sshd)."""
    with _lock:
        for found in _open.values():
            found.close()
        _open.clear()
