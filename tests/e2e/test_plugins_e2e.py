"""A package from outside the tree, pip-installed into this interpreter, registers an agent, a
check kind and a report format through entry points (docs/architecture.md, "Extending
skillbench"); an eval runs with the first two (real podman sandboxes, the fake model server, the
CLI's summary.json) and `report --format` renders its run folder with the third."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillbench.agents import agents
from skillbench.cli import main
from skillbench.evals.kinds import plugin_kinds
from skillbench.report.formats import plugin_formats
from tests.helpers import BASE, CAND, conv, run_eval, skill, write_file
from tests.plugin_package import DIST, MODULE, write_package

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]


def _pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "-q", *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[None]:
    """The package built and installed from tmp_path, as a user's `pip install` does; removed
    afterwards, with the registries read again."""
    _pip("install", "--no-deps", str(write_package(tmp_path / "plugin-src")))
    importlib.invalidate_caches()
    agents.cache_clear()
    plugin_kinds.cache_clear()
    plugin_formats.cache_clear()
    try:
        yield
    finally:
        _pip("uninstall", "-y", DIST)
        sys.modules.pop(MODULE, None)
        agents.cache_clear()
        plugin_kinds.cache_clear()
        plugin_formats.cache_clear()


def test_an_installed_agent_and_check_kind_run_an_eval(
    installed: None, fake, tmp_path: Path, capsys
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/hello.yaml": (
                "task: Create hello.txt\nchecks:\n  - file_says: hello.txt=hello\n"
                "  - file_says: .agent=stamped-by-plugin\n"
            )
        },
    )
    fake(
        {
            "conversations": [
                conv(CAND, "Create hello", write_file("hello.txt", "hello\n"), {"text": "done"}),
                conv(BASE, "Create hello", {"text": "I would need more information."}),
            ]
        }
    )
    code, _, summary = run_eval(capsys, folder, tmp_path / "run", "--agent", "stamping")
    assert summary["agent"] == "stamping"
    (row,) = summary["rows"]
    assert (row["outcome"], row["decided_by"]) == ("win", "checks")
    checks = {
        arm: [(c["passed"], c["detail"]) for c in row["arms"][arm]["checks"]] for arm in row["arms"]
    }
    assert checks == {
        # the plugin agent stamped both workspaces; the plugin kind read them
        "candidate": [
            (True, "plugin: hello.txt holds 'hello'"),
            (True, "plugin: .agent holds 'stamped-by-plugin'"),
        ],
        "baseline": [
            (False, "plugin: no hello.txt"),
            (True, "plugin: .agent holds 'stamped-by-plugin'"),
        ],
    }
    assert code == 3  # one case is too few units for a verdict
    # the package's report format renders the run folder
    assert main(["report", str(tmp_path / "run"), "--format", "outcomes"]) == 0
    assert capsys.readouterr().out == "verdict INCONCLUSIVE\nhello vs baseline: win (checks)\n"
