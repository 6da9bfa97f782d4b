"""Which podman service skillbench talks to: the precedence, and podman's connection files
read as podman writes them (connection.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skillbench.sandbox.base import Mount, SandboxError
from skillbench.sandbox.podman import connection
from skillbench.sandbox.podman.channel import CHANNEL_ENV, channel_for, copy_in
from skillbench.sandbox.podman.connection import URL_ENV, Connection, configured
from skillbench.sandbox.podman.service import PodmanService

MACHINE = "ssh://core@127.0.0.1:53685/run/user/501/podman/podman.sock"


def _json(path: Path, default: str, **connections: dict) -> Path:
    """A podman-connections.json as podman 5 (and `podman machine init`) writes it."""
    path.write_text(json.dumps({"Connection": {"Default": default, "Connections": connections}}))
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment naming only tmp files: the real ones never leak into a test."""
    return {
        "PODMAN_CONNECTIONS_CONF": str(tmp_path / "podman-connections.json"),
        "CONTAINERS_CONF": str(tmp_path / "containers.conf"),
    }


def test_nothing_configured_means_a_service_of_our_own(env: dict[str, str]) -> None:
    assert configured(env) is None


def test_precedence_url_env_then_container_host_then_the_default_connection(
    env: dict[str, str], tmp_path: Path
) -> None:
    _json(tmp_path / "podman-connections.json", "m", m={"URI": MACHINE, "Identity": "/k/machine"})
    chosen = configured(env)
    assert chosen is not None
    assert (chosen.url, chosen.identity) == (MACHINE, "/k/machine")
    assert chosen.source == f"connection m in {tmp_path / 'podman-connections.json'}"
    env["CONTAINER_HOST"] = "tcp://10.0.0.5:8888"
    env["CONTAINER_SSHKEY"] = "/k/id"
    chosen = configured(env)
    assert chosen is not None
    assert (chosen.url, chosen.source, chosen.identity) == (
        "tcp://10.0.0.5:8888",
        "CONTAINER_HOST",
        "/k/id",
    )
    env[URL_ENV] = "unix:///run/sb.sock"
    chosen = configured(env)
    assert chosen is not None
    assert (chosen.url, chosen.source, chosen.identity) == ("unix:///run/sb.sock", URL_ENV, "")


def test_container_connection_picks_a_named_one_over_the_default(
    env: dict[str, str], tmp_path: Path
) -> None:
    _json(
        tmp_path / "podman-connections.json",
        "m",
        m={"URI": MACHINE},
        other={"URI": "ssh://me@build:22/run/podman/podman.sock"},
    )
    env["CONTAINER_CONNECTION"] = "other"
    chosen = configured(env)
    assert chosen is not None and chosen.url == "ssh://me@build:22/run/podman/podman.sock"
    env["CONTAINER_CONNECTION"] = "gone"
    with pytest.raises(SandboxError) as exc:
        configured(env)
    assert str(exc.value) == (
        "CONTAINER_CONNECTION names podman connection 'gone', which is not configured "
        "(known: m, other); see `podman system connection list`"
    )


@pytest.mark.skipif(shutil.which("podman") is None, reason="needs the podman CLI")
def test_a_containers_conf_written_by_podman_itself_is_read(
    env: dict[str, str], tmp_path: Path
) -> None:
    """podman 4 keeps connections in containers.conf: let the real CLI write one."""
    conf = Path(env["CONTAINERS_CONF"])
    conf.touch()  # podman refuses a CONTAINERS_CONF that does not exist
    subprocess.run(
        [
            *("podman", "system", "connection", "add", "--default"),
            *("--identity", str(tmp_path / "key"), "vm", MACHINE),
        ],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
    )
    chosen = configured(env)
    assert chosen is not None
    assert (chosen.url, chosen.identity, chosen.source) == (
        MACHINE,
        str(tmp_path / "key"),
        f"connection vm in {conf}",
    )
    assert (chosen.transport, chosen.shares_filesystem) == ("ssh", False)


def test_the_json_file_wins_over_containers_conf_for_a_name_and_the_default(
    env: dict[str, str], tmp_path: Path
) -> None:
    Path(env["CONTAINERS_CONF"]).write_text(
        '[engine]\nactive_service = "old"\n'
        '[engine.service_destinations.old]\nuri = "tcp://old:1"\n'
        '[engine.service_destinations.both]\nuri = "tcp://toml:1"\n'
    )
    _json(tmp_path / "podman-connections.json", "both", both={"URI": "tcp://json:1"})
    chosen = configured(env)
    assert chosen is not None and chosen.url == "tcp://json:1"
    (tmp_path / "podman-connections.json").unlink()
    chosen = configured(env)
    assert chosen is not None and chosen.url == "tcp://old:1"


def test_xdg_config_home_holds_a_users_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not root (or not Linux): podman keeps them under $XDG_CONFIG_HOME/containers."""
    monkeypatch.setattr(connection.os, "geteuid", lambda: 1000)
    (tmp_path / "containers").mkdir()
    _json(tmp_path / "containers/podman-connections.json", "m", m={"URI": MACHINE})
    chosen = configured({"XDG_CONFIG_HOME": str(tmp_path)})
    assert chosen is not None and chosen.url == MACHINE


def test_a_broken_file_is_refused_naming_it(env: dict[str, str]) -> None:
    Path(env["PODMAN_CONNECTIONS_CONF"]).write_text("{not json")
    with pytest.raises(SandboxError) as exc:
        configured(env)
    assert str(exc.value).startswith(f"{env['PODMAN_CONNECTIONS_CONF']}: not valid json (")
    assert str(exc.value).endswith("); fix or remove it")


def test_an_unknown_scheme_is_refused_naming_where_it_came_from(env: dict[str, str]) -> None:
    env["CONTAINER_HOST"] = "npipe:////./pipe/podman"
    with pytest.raises(SandboxError) as exc:
        configured(env)
    assert str(exc.value) == (
        "CONTAINER_HOST: podman URL 'npipe:////./pipe/podman' has scheme 'npipe'; "
        "use unix://, ssh:// or tcp://"
    )


@pytest.mark.parametrize(
    ("url", "transport", "shares"),
    [
        ("unix:///run/podman/podman.sock", "unix", True),
        ("http+unix:///run/podman/podman.sock", "unix", True),
        (MACHINE, "ssh", False),
        ("tcp://127.0.0.1:8080", "tcp", False),
    ],
)
def test_only_a_local_unix_socket_shares_the_filesystem(
    url: str, transport: str, shares: bool
) -> None:
    chosen = configured({"CONTAINER_HOST": url})
    assert chosen is not None
    assert (chosen.transport, chosen.shares_filesystem) == (transport, shares)


def test_on_macos_nothing_configured_is_refused_before_any_podman_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """podman on macOS and Windows is a remote client with no `system service`: say what to do
    instead of reporting that a service exited."""
    monkeypatch.setattr(sys, "platform", "darwin")
    for name in (URL_ENV, "CONTAINER_HOST", "CONTAINER_CONNECTION", "PODMAN_CONNECTIONS_CONF"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # where podman keeps them on macOS
    with pytest.raises(SandboxError) as exc:
        PodmanService.start_or_reuse()
    assert str(exc.value) == connection.NO_LOCAL_SERVICE
    assert "podman machine init" in str(exc.value) and "\n" not in str(exc.value)
    chosen = configured({"CONTAINER_HOST": "unix:///Users/me/podman-machine-api.sock"})
    assert chosen is not None and not chosen.shares_filesystem  # the socket is the VM's


@pytest.mark.parametrize(
    ("url", "env", "expected"),
    [
        ("unix:///run/podman.sock", {}, "local"),
        ("unix:///run/podman.sock", {CHANNEL_ENV: "api"}, "api"),
        ("tcp://127.0.0.1:8080", {}, "api"),
        ("ssh://core@127.0.0.1:2222/run/podman.sock", {}, "api"),
        ("ssh://core@127.0.0.1:2222/run/podman.sock", {CHANNEL_ENV: "api"}, "api"),
    ],
)
def test_the_channel_follows_the_connection_unless_forced(url, env, expected) -> None:
    assert channel_for(Connection(url, "test"), env) == expected


@pytest.mark.parametrize(
    ("url", "value", "says"),
    [
        ("tcp://127.0.0.1:8080", "local", "does not share this host's filesystem: unset it"),
        ("unix:///run/podman.sock", "fast", "use api or local"),
    ],
)
def test_a_channel_that_cannot_work_is_refused_in_one_line(url, value, says) -> None:
    with pytest.raises(SandboxError) as exc:
        channel_for(Connection(url, "test"), {CHANNEL_ENV: value})
    assert says in str(exc.value) and CHANNEL_ENV in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_writable_bind_mount_cannot_be_copied_in(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="a writable bind mount cannot cross"):
        copy_in([Mount(str(tmp_path), "/data", read_only=False)])
