"""Which podman service skillbench talks to, read the way podman's own CLI reads it.

Precedence, first match wins:

1. `SKILLBENCH_PODMAN_URL` (a service skillbench or its tests started; reused when it answers)
2. `CONTAINER_HOST`, with `CONTAINER_SSHKEY` as the ssh key (podman's `--url` / `--identity`)
3. `CONTAINER_CONNECTION`, else the default connection of `podman system connection`
   (podman-connections.json, then containers.conf's `[engine] active_service`): what
   `podman machine init` sets up on macOS and Windows
4. none of these: a local service of skillbench's own (service.py)

Where the files are follows containers/common: `PODMAN_CONNECTIONS_CONF` and `CONTAINERS_CONF`
name them outright; root on Linux keeps them in /etc/containers (that is where `podman system
connection add` writes as root); everyone else under `$XDG_CONFIG_HOME/containers` (or
~/.config/containers).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import msgspec

from skillbench.sandbox.base import SandboxError

URL_ENV = "SKILLBENCH_PODMAN_URL"
OWN = "a service of skillbench's own"
NO_LOCAL_SERVICE = (
    f"no podman connection is configured, and on {sys.platform} skillbench cannot start a "
    "podman service of its own (podman runs in a VM there): `podman machine init && podman "
    "machine start` sets one up and makes it podman's default connection"
)

Transport = Literal["unix", "ssh", "tcp"]
_SCHEMES: dict[str, Transport] = {
    "unix": "unix",
    "http+unix": "unix",
    "ssh": "ssh",
    "http+ssh": "ssh",
    "tcp": "tcp",
    "http": "tcp",
}


class Connection(msgspec.Struct, frozen=True):
    """A podman API endpoint and where its address came from (for doctor and errors)."""

    url: str
    source: str  # "SKILLBENCH_PODMAN_URL", "CONTAINER_HOST", "connection NAME in PATH", OWN
    identity: str = ""  # the ssh key, when the connection names one

    @property
    def transport(self) -> Transport:
        return _SCHEMES[urlsplit(self.url).scheme]

    @property
    def shares_filesystem(self) -> bool:
        """Whether a host folder bind-mounted into a container is the same folder, and a unix
        socket in it reaches the host: only for a local service on Linux. Over ssh or tcp the
        containers live on another machine; on macOS and Windows a unix socket is podman
        machine's forwarded one, and the containers run in its VM."""
        return self.transport == "unix" and sys.platform == "linux"


def shown(url: str) -> str:
    """`url` fit to print: a password in it (never used) replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.netloc.rpartition('@')[2]}"
    return parts._replace(netloc=netloc).geturl()


def _checked(url: str, source: str, identity: str = "") -> Connection:
    scheme = urlsplit(url).scheme
    if scheme not in _SCHEMES:
        raise SandboxError(
            f"{source}: podman URL {shown(url)!r} has scheme {scheme!r}; use unix://, ssh:// "
            "or tcp://"
        )
    return Connection(url, source, identity)


def _config_dir(env: Mapping[str, str]) -> Path:
    if sys.platform == "linux" and os.geteuid() == 0:
        return Path("/etc/containers")
    xdg = env.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "containers"


def _connections_json(env: Mapping[str, str]) -> Path:
    named = env.get("PODMAN_CONNECTIONS_CONF")
    return Path(named) if named else _config_dir(env) / "podman-connections.json"


def _containers_conf(env: Mapping[str, str]) -> Path:
    named = env.get("CONTAINERS_CONF")
    return Path(named) if named else _config_dir(env) / "containers.conf"


def _read(path: Path) -> dict[str, object]:
    """The parsed file, {} when absent; an unreadable one is refused naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SandboxError(f"{path}: cannot read podman's connections ({exc.strerror})") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except ValueError as exc:  # JSONDecodeError and TOMLDecodeError are both ValueErrors
        raise SandboxError(
            f"{path}: not valid {path.suffix[1:]} ({exc}); fix or remove it"
        ) from exc
    return data if isinstance(data, dict) else {}


def _table(data: Mapping[str, object], *keys: str) -> dict[str, object]:
    for key in keys:
        value = data.get(key)
        if not isinstance(value, dict):
            return {}
        data = value
    return dict(data)


def _config_connections(env: Mapping[str, str]) -> tuple[dict[str, tuple[Path, dict]], str]:
    """Every configured connection (name -> its file and fields) and the default's name.

    podman-connections.json (podman 5) wins over containers.conf (podman 4) for a name both
    define and for the default, as podman reads them."""
    found: dict[str, tuple[Path, dict]] = {}
    conf = _containers_conf(env)
    engine = _table(_read(conf), "engine")
    for name, fields in _table(engine, "service_destinations").items():
        if isinstance(fields, dict):
            found[name] = (conf, fields)
    default = str(engine.get("active_service") or "")
    path = _connections_json(env)
    data = _read(path)
    for name, fields in _table(data, "Connection", "Connections").items():
        if isinstance(fields, dict):
            found[name] = (path, fields)
    default = str(_table(data, "Connection").get("Default") or default)
    return found, default


def _named(env: Mapping[str, str], name: str, why: str) -> Connection:
    found, _ = _config_connections(env)
    if name not in found:
        known = ", ".join(sorted(found)) or "none"
        raise SandboxError(
            f"{why} names podman connection {name!r}, which is not configured (known: {known}); "
            "see `podman system connection list`"
        )
    path, fields = found[name]
    url = str(fields.get("URI") or fields.get("uri") or "")
    identity = str(fields.get("Identity") or fields.get("identity") or "")
    return _checked(url, f"connection {name} in {path}", identity)


def configured(env: Mapping[str, str] | None = None) -> Connection | None:
    """The service the environment and podman's config name (1-3 above), else None."""
    env = os.environ if env is None else env
    if url := env.get(URL_ENV):
        return _checked(url, URL_ENV)
    if url := env.get("CONTAINER_HOST"):
        return _checked(url, "CONTAINER_HOST", env.get("CONTAINER_SSHKEY", ""))
    if name := env.get("CONTAINER_CONNECTION"):
        return _named(env, name, "CONTAINER_CONNECTION")
    _, default = _config_connections(env)
    return _named(env, default, "the default connection") if default else None
