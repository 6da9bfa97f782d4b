"""Another user of the machine as the attacker: skillbench's folders under a shared temp
folder (/tmp when XDG_RUNTIME_DIR is unset: a CI job, root over ssh, a Ray worker) have
predictable names. A folder someone else made there first (or a link to one) would hold the
executor sockets, the podman service's and the ssh tunnel's sockets, and on a Ray worker the
unpacked skill and its evals: whoever owns it could stand in for a sandbox's executor or
hand a worker checks of their own. Such a folder is refused, in one line."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from skillbench.sandbox.base import SandboxError
from skillbench.sandbox.runtime import runtime_dir

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="making another user's folder needs root")
OTHER = 4242  # a uid that is not ours


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A world-writable temp folder standing in for /tmp, used by tempfile."""
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return shared


def planted(path: Path) -> Path:
    path.mkdir(parents=True)
    path.chmod(0o777)
    os.chown(path, OTHER, OTHER)
    return path


@pytest.mark.parametrize("how", ["folder", "link"])
def test_a_runtime_folder_another_user_made_is_refused(shared_tmp: Path, how: str) -> None:
    name = shared_tmp / f"skillbench-{os.getuid()}"
    if how == "folder":
        planted(name)
    else:  # a link to a folder of the attacker's
        name.symlink_to(planted(shared_tmp / "theirs"))
    with pytest.raises(SandboxError) as err:
        runtime_dir()
    assert str(name) in str(err.value) and "\n" not in str(err.value)


def test_a_worker_never_takes_a_skill_another_user_unpacked(shared_tmp: Path) -> None:
    from skillbench.cluster import placement

    cache = planted(shared_tmp / f"skillbench-{os.getuid()}-cluster")
    (cache / "sha256-x-sha256-y" / "greeter" / "evals").mkdir(parents=True)
    with pytest.raises(SandboxError) as err:
        placement.node_cache()
    assert str(cache) in str(err.value)


def test_our_own_folder_is_used(shared_tmp: Path) -> None:
    (shared_tmp / f"skillbench-{os.getuid()}").mkdir(mode=0o755)  # as earlier versions made it
    made = runtime_dir()
    assert made == shared_tmp / f"skillbench-{os.getuid()}" and runtime_dir() == made
    assert made.stat().st_mode & 0o777 == 0o700
