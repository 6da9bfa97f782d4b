"""skillbench against a podman service reached only over ssh:// (issue 28): the tunnel, its
one-line errors, doctor, and the host's images loaded into that service."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.sandbox.base import SandboxError
from skillbench.sandbox.podman.connection import URL_ENV, configured
from skillbench.sandbox.podman.hostcli import host_env
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.imageload import host_image, service_image_id
from skillbench.sandbox.podman.pull import pull
from skillbench.sandbox.podman.reach import client_of
from skillbench.sandbox.podman.service import PodmanService
from skillbench.sandbox.podman.tunnel import close_all, tunnel
from tests.sandbox.test_registry import Registry, _gone_image, registry  # noqa: F401
from tests.ssh_service import SshPodman, free_port

pytestmark = pytest.mark.sandbox


def _refusal(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    close_all()  # (a tunnel of an earlier test would answer)
    started = time.monotonic()
    with pytest.raises(SandboxError) as exc:
        PodmanService.start_or_reuse()
    assert time.monotonic() - started < 15, "a failing ssh must not keep skillbench waiting"
    message = str(exc.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def _ssh_children() -> list[str]:
    """The ssh clients this process runs (its tunnels)."""
    found = subprocess.run(
        ["ps", "-o", "args=", "--ppid", str(os.getpid())],
        capture_output=True,
        text=True,
    )
    return [line for line in found.stdout.splitlines() if line.startswith("ssh ")]


def test_one_tunnel_carries_every_pooled_connection(over_ssh: SshPodman) -> None:
    """Our pooled client (as the provider makes it) over ssh: sixteen threads at once, one
    ssh process, and the service is the ssh-only one (its storage, not the host's)."""
    close_all()
    connection = configured()
    assert connection is not None and connection.transport == "ssh"
    assert not connection.shares_filesystem
    with client_of(connection, 30, max_pool_size=64) as client:
        answers: list[bool] = []
        threads = [
            threading.Thread(target=lambda: answers.extend(client.ping() for _ in range(5)))
            for _ in range(16)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [True] * 80
        store = client.info()["store"]["graphRoot"]
    assert store == str(over_ssh.root / "storage")
    assert len(_ssh_children()) == 1, _ssh_children()


def test_ssh_failures_are_one_line_naming_container_host(
    over_ssh: SshPodman, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    said = _refusal(monkeypatch, CONTAINER_SSHKEY=str(stranger))
    assert said.startswith(f"CONTAINER_HOST: ssh to root@127.0.0.1:{over_ssh.port} refused the key")
    assert "authorized_keys" in said and "CONTAINER_SSHKEY" in said
    monkeypatch.setenv("CONTAINER_SSHKEY", str(over_ssh.key))

    nobody = free_port()
    said = _refusal(monkeypatch, CONTAINER_HOST=f"ssh://root@127.0.0.1:{nobody}{over_ssh.sock}")
    assert said.startswith(f"CONTAINER_HOST: cannot reach root@127.0.0.1:{nobody} over ssh")
    assert "Connection refused" in said

    wrong = over_ssh.url.replace("podman.sock", "nothing.sock")
    said = _refusal(monkeypatch, CONTAINER_HOST=wrong)
    assert said.startswith(
        f"CONTAINER_HOST: ssh to root@127.0.0.1:{over_ssh.port} works, but no podman socket "
        f"answers at {over_ssh.root}/nothing.sock; fix the path in CONTAINER_HOST"
    )

    said = _refusal(monkeypatch, CONTAINER_HOST=over_ssh.url, HOME=str(tmp_path))
    assert said.startswith(
        f"CONTAINER_HOST: the host key of root@127.0.0.1:{over_ssh.port} is not in known_hosts"
    )
    said = _refusal(monkeypatch, HOME=str(over_ssh.home), CONTAINER_SSHKEY=str(tmp_path / "no"))
    assert (
        said == f"CONTAINER_SSHKEY: the key {tmp_path / 'no'} does not exist; point it at your key"
    )
    mark = tmp_path / "ran"
    said = _refusal(monkeypatch, CONTAINER_SSHKEY=f"-oProxyCommand=touch {mark}")
    assert said.startswith("CONTAINER_SSHKEY: the key -oProxyCommand=") and not mark.exists()


def test_a_tunnel_whose_ssh_died_is_reopened_where_the_clients_reach_it(
    over_ssh: SshPodman,
) -> None:
    close_all()
    connection = configured()
    assert connection is not None
    first = tunnel(connection)
    with client_of(connection, 30) as client:
        assert client.ping()
        first.process.kill()
        first.process.wait()
        again = tunnel(connection)  # what the next client_of (or attach) does
        assert again is not first and again.local == first.local
        assert client.ping()  # the client made before reconnects through the new one


@pytest.mark.parametrize(
    "url",
    [
        "ssh://-oProxyCommand=touch%20{mark}@127.0.0.1:{port}/run/podman.sock",
        "ssh://root@-oProxyCommand=touch%20{mark}/run/podman.sock",
        "ssh://root@127.0.0.1:{port}/run/podman.sock;touch%20{mark}",
        "ssh://root@127.0.0.1:{port}/run/$(touch%20{mark}).sock",
        "ssh://root@127.0.0.1:{port}/a.sock:/etc/passwd",
    ],
)
def test_a_hostile_container_host_runs_nothing(
    url: str, over_ssh: SshPodman, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """podman-py's ssh hands the URL to ssh as one argument and waits 300 s for a tunnel
    that never comes; ours refuses it before ssh runs, in one line."""
    mark = tmp_path / "ran"
    said = _refusal(monkeypatch, CONTAINER_HOST=url.format(mark=mark, port=over_ssh.port))
    assert said.startswith("CONTAINER_HOST: ")
    assert not mark.exists()
    assert _ssh_children() == []


def test_a_password_in_the_url_is_never_printed(
    over_ssh: SshPodman, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    secret = "hunter2-never-printed"
    url = over_ssh.url.replace("root@", f"root:{secret}@")
    said = _refusal(monkeypatch, CONTAINER_HOST=url)
    assert secret not in said and "root:***@" in said
    assert main(["doctor"]) == 1
    assert secret not in capsys.readouterr().out


def test_doctor_names_the_ssh_service_and_that_it_shares_no_filesystem(
    over_ssh: SshPodman, capsys
) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        f"ok      podman service: {over_ssh.url} (from CONTAINER_HOST): ssh, does not share "
        "this host's filesystem (sandboxes get their files and executor channel through the API)"
    ) in out
    assert any(line.startswith(f"ok      image in service: {IMAGE} ") for line in out), out


def test_image_build_loads_the_images_into_the_ssh_service(over_ssh: SshPodman, capsys) -> None:
    """Built on the host, streamed into the service through the API: same ID there, and a
    container from it runs there (and only there)."""
    with over_ssh.direct() as direct:  # (an earlier test may have loaded it)
        if direct.images.exists(IMAGE):
            direct.images.remove(IMAGE, force=True)
    started = time.monotonic()
    assert main(["image", "build"]) == 0
    took = time.monotonic() - started
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"image {IMAGE} already present"
    assert out[1].startswith(f"loading {IMAGE} (")
    assert out[1].endswith(f" MB) into the podman service at {over_ssh.url} (ssh)")
    assert out[-1].startswith(f"loaded {IMAGE} in ")
    with capsys.disabled():
        print(f"\nloaded the sandbox image over ssh in {took:.1f} s ({out[1]})")
    assert main(["image", "build"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"image {IMAGE} already in the podman service at {over_ssh.url}"
    )
    connection = configured()
    assert connection is not None
    host = host_image(IMAGE)
    with client_of(connection, 60) as client:
        assert host is not None and service_image_id(client, IMAGE) == host[0]
        ctr = client.containers.create(IMAGE, command=["sleep", "60"], network_mode="none")
        try:
            ctr.start()
            code, (output, _) = ctr.exec_run(["cat", "/etc/debian_version"], demux=True)
            assert code == 0 and output.decode().strip()[:2].isdigit()
            listed = subprocess.run(
                ["podman", "ps", "-a", "-q", "--no-trunc"], capture_output=True, env=host_env()
            )
            assert ctr.id not in listed.stdout.decode()  # the host's podman never saw it
        finally:
            ctr.remove(force=True, timeout=0)
        assert not client.containers.exists(ctr.id)


def test_a_pull_lands_where_the_host_builds_not_in_the_ssh_service(
    registry: Registry,  # noqa: F811  (the fixture imported above)
    ssh_podman: SshPodman,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A registry base or case image is pulled into the host's storage, which builds use
    (then loaded into the service like any image), never through podman-py's ssh."""
    ref = _gone_image(registry, "test/ssh-pull")
    close_all()
    with monkeypatch.context() as env:
        env.delenv(URL_ENV, raising=False)
        for name, value in ssh_podman.env().items():
            env.setenv(name, value)
        seen: list[str] = []
        pull(ref, log=seen.append)
        assert seen[-1].startswith(f"pulled {ref} (sha256:")
        assert _ssh_children() == []  # no tunnel: the ssh service was never asked
    held = subprocess.run(["podman", "image", "exists", ref], env=host_env())
    assert held.returncode == 0
    with ssh_podman.direct() as direct:
        assert not direct.images.exists(ref)


def test_a_podman_connection_with_its_identity_reaches_the_ssh_service(
    over_ssh: SshPodman, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
) -> None:
    """What `podman system connection add --identity` (and `podman machine init`) writes is
    enough: no CONTAINER_HOST, the default connection's URI and key."""
    conf = tmp_path / "podman-connections.json"
    conf.write_text(
        json.dumps(
            {
                "Connection": {
                    "Default": "box",
                    "Connections": {"box": {"URI": over_ssh.url, "Identity": str(over_ssh.key)}},
                }
            }
        )
    )
    for name in ("CONTAINER_HOST", "CONTAINER_SSHKEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("PODMAN_CONNECTIONS_CONF", str(conf))
    close_all()
    main(["doctor"])
    out = capsys.readouterr().out
    assert f"ok      podman service: {over_ssh.url} (from connection box in {conf}): ssh," in out
