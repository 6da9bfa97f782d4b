"""skillbench installed as a Python tool: a wheel built from the repository, installed into a
fresh venv without the dev extras, with a podman store of its own that holds no image, so the
sandbox image is built on first use (as on a machine that never ran `make setup`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from skillbench.sandbox.podman.connection import URL_ENV

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox]

ROOT = Path(__file__).resolve().parents[2]
DATA = (  # read at run time from the package folder, so they must be in the wheel
    "skillbench/sandbox/podman/files/Containerfile",
    "skillbench/sandbox/inside/executor.py",
    "skillbench/models/scripts/demo.yaml",
    "skillbench/report/files/report.css",
    "skillbench/report/files/report.js",
)


def _run(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 900, code: int = 0
) -> str:
    done = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == code, f"{argv[:3]}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)]
    _run(pip, dict(os.environ), ROOT)
    (built,) = dist.glob("skillbench-*.whl")
    return built


def test_the_wheel_carries_the_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [p for p in DATA if p not in names] == []
    assert "skillbench/models/fake_server.py" in names  # the scripted driver's server


def test_an_installed_wheel_checks_a_skill_and_runs_an_eval(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], dict(os.environ), tmp_path)
    store = tmp_path / "store"
    (store / "storage.conf").parent.mkdir()
    (store / "storage.conf").write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{store}/graph"\nrunroot = "{store}/run"\n'
    )
    env = {  # nothing of the repository's: no PYTHONPATH, no shared service, an empty store
        k: v
        for k, v in os.environ.items()
        if k not in {URL_ENV, "PYTHONPATH", "VIRTUAL_ENV", "CONTAINER_HOST"}
    }
    env |= {
        "PATH": f"{venv / 'bin'}:{env['PATH']}",
        "CONTAINERS_STORAGE_CONF": str(store / "storage.conf"),
        "SKILLBENCH_HOME": str(tmp_path / "home"),
    }
    _run([str(venv / "bin/pip"), "install", "-q", str(wheel)], env, tmp_path)
    exe = str(venv / "bin/skillbench")
    assert shutil.which("skillbench", path=env["PATH"]) == exe
    skill = tmp_path / "lib/diff-review"
    shutil.copytree(ROOT / "skills/diff-review", skill, symlinks=True)
    try:
        assert "0 errors" in _run([exe, "check", str(skill)], env, tmp_path)
        out = _run(
            [
                *(exe, "eval", str(skill), "--model", "scripted/demo", "--no-gen"),
                *("--case", "small-change", "--execution-only", "--out", str(tmp_path / "run")),
            ],
            env,
            tmp_path,
            code=3,  # one case is one unit: INCONCLUSIVE
        )
    finally:  # the store is the test's own: never `system reset` (it touches shared config)
        subprocess.run(["podman", "rmi", "-a", "-f"], env=env, capture_output=True, check=False)
        shutil.rmtree(store, ignore_errors=True)
    assert "is missing; building it now (first use)" in out
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert (summary["expected_rows"], summary["scored_rows"]) == (1, 1)
