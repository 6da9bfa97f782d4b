"""Plugins through entry points (skillbench/plugins.py): a package's agent and check kind
join the registries; a broken one is one line naming the entry point and its distribution."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from skillbench.agents import agents, make_agent
from skillbench.checks.run import run_checks
from skillbench.cli import main
from skillbench.evals.kinds import kind_docs, plugin_kinds
from skillbench.evals.load import load_assets
from skillbench.plugins import PluginError
from skillbench.results.transcript import Transcript
from tests.helpers import make_skill
from tests.plugin_package import ENTRY_POINTS, MODULE, SOURCE, write_dist_info

Install = Callable[[str, dict[str, dict[str, str]], dict[str, str]], None]


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """Put distributions on sys.path, as an install does, with the registries unread."""
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    names: list[str] = []

    def put(dist: str, points: dict[str, dict[str, str]], modules: dict[str, str]) -> None:
        write_dist_info(site, dist, points, modules)
        names.extend(Path(m).stem for m in modules)
        agents.cache_clear()
        plugin_kinds.cache_clear()

    yield put
    agents.cache_clear()
    plugin_kinds.cache_clear()
    for name in names:
        sys.modules.pop(name, None)


def test_a_packages_agent_and_check_kind_join_the_registries(install: Install, tmp_path) -> None:
    install("stamp", ENTRY_POINTS, {f"{MODULE}.py": SOURCE})
    assert type(make_agent("stamping")).__name__ == "StampingAgent"
    assert "builtin" in agents()  # the built-ins stay
    assert kind_docs()["file_says"] == "PATH=TEXT: the workspace file PATH holds TEXT"
    folder = make_skill(
        tmp_path,
        "s",
        {
            "evals/cases/a.yaml": (
                "task: t\nchecks:\n  - file_says: out.txt=hi\n  - file_says: out.txt=\n"
                "  - file_sayz: x=y\n"
            ),
            "evals/cases/b.yaml": "task: t\nchecks:\n  - file_says: [1]\n",
        },
    )
    assets = load_assets(folder)
    problems = [(Path(p.path).name, p.line, p.severity, p.message) for p in assets.problems]
    did_you_mean = "did you mean `file_says`?"
    assert sorted(problems) == [
        ("a.yaml", 4, "warning", "`file_says`: empty TEXT: it passes whenever PATH exists"),
        (
            "a.yaml",
            5,
            "warning",
            f"unknown check kind `file_sayz`: it will fail at run time; {did_you_mean}",
        ),
        ("b.yaml", 3, "error", "check `file_says`: takes PATH=TEXT, got [1]"),
    ]
    (case,) = assets.cases
    results = asyncio.run(run_checks(case.checks, Transcript([]), None))
    assert [(r.name, r.passed, r.detail) for r in results[:1]] == [
        ("file_says: out.txt=hi", False, "no workspace to read")
    ]


def test_a_check_kind_that_raises_fails_its_check_not_the_run(install: Install, tmp_path) -> None:
    source = (
        SOURCE
        + "\n\nclass Boom(FileSays):\n    name = 'boom'\n\n    async def run(self, arg, context):\n        raise RuntimeError('plugin bug')\n\n\nBOOM = Boom()\n"
    )
    install("boomer", {"skillbench.check_kinds": {"boom": "boomer:BOOM"}}, {"boomer.py": source})
    folder = make_skill(tmp_path, "s", {"evals/cases/a.yaml": "task: t\nchecks:\n  - boom: a=b\n"})
    (case,) = load_assets(folder).cases
    (result,) = asyncio.run(run_checks(case.checks, Transcript([]), None))
    assert (result.passed, result.detail) == (
        False,
        "the check kind raised RuntimeError: plugin bug",
    )


BROKEN = [
    (
        {"skillbench.agents": {"gone": "no_such_module:Agent"}},
        {},
        "entry point 'gone' in group skillbench.agents (distribution broken 1.0) does not load "
        "(no_such_module:Agent): ModuleNotFoundError: No module named 'no_such_module'",
    ),
    (
        {"skillbench.agents": {"fn": "brokenmod:make"}},
        {"brokenmod.py": "def make():\n    pass\n"},
        "entry point 'fn' in group skillbench.agents (distribution broken 1.0): brokenmod:make "
        "is a function, not an agent class",
    ),
    (
        {"skillbench.agents": {"half": "brokenmod:Half"}},
        {
            "brokenmod.py": "class Half:\n    name = 'half'\n    def version(self):\n        return '1'\n"
        },
        "entry point 'half' in group skillbench.agents (distribution broken 1.0): brokenmod:Half "
        "lacks check_model, image_name, image, session, invoked, ambient_policy, aclose",
    ),
    (
        {"skillbench.agents": {"builtin": "brokenmod:X"}},
        {"brokenmod.py": "X = 1\n"},
        "entry point 'builtin' in group skillbench.agents (distribution broken 1.0): 'builtin' is "
        "a built-in name; the package must register another name",
    ),
    (
        {"skillbench.check_kinds": {"file_exists": "brokenmod:X"}},
        {"brokenmod.py": "X = 1\n"},
        "entry point 'file_exists' in group skillbench.check_kinds (distribution broken 1.0): "
        "'file_exists' is a built-in name; the package must register another name",
    ),
    (
        {"skillbench.check_kinds": {"file_says": f"{MODULE}:FileSays"}},
        {f"{MODULE}.py": SOURCE},
        "entry point 'file_says' in group skillbench.check_kinds (distribution broken 1.0): "
        f"{MODULE}:FileSays is a class; point the entry point at an instance of it",
    ),
    (
        {"skillbench.check_kinds": {"other": f"{MODULE}:FILE_SAYS"}},
        {f"{MODULE}.py": SOURCE},
        "entry point 'other' in group skillbench.check_kinds (distribution broken 1.0): "
        f"{MODULE}:FILE_SAYS has name 'file_says'; it must be the entry point's, 'other'",
    ),
    (
        {"skillbench.check_kinds": {"sync": "brokenmod:SYNC"}},
        {
            "brokenmod.py": "class Sync:\n    name, doc = 'sync', 'd'\n    def parse(self, v):\n"
            "        return v\n    def lint(self, a):\n        return []\n    def run(self, a, c):\n"
            "        pass\nSYNC = Sync()\n"
        },
        "entry point 'sync' in group skillbench.check_kinds (distribution broken 1.0): "
        "brokenmod:SYNC has a `run` that is not `async def`",
    ),
]


@pytest.mark.parametrize(("points", "modules", "message"), BROKEN)
def test_a_broken_plugin_is_one_line_naming_it(
    install: Install, tmp_path: Path, capsys, points, modules, message
) -> None:
    install("broken", points, modules)
    group = next(iter(points))
    with pytest.raises(PluginError) as caught:
        agents() if group == "skillbench.agents" else plugin_kinds()
    assert str(caught.value) == message
    if group == "skillbench.agents":  # asking for any agent reads the group
        with pytest.raises(PluginError) as again:
            make_agent("builtin")
        assert str(again.value) == message
        return
    # through the CLI: that line, no traceback, the error exit code
    folder = make_skill(
        tmp_path, "s", {"evals/cases/a.yaml": "task: t\nchecks:\n  - file_exists: x\n"}
    )
    code = main(["check", str(folder)])
    assert (code, capsys.readouterr().err) == (2, f"skillbench: error: {message}\n")


def test_two_packages_registering_one_name_are_refused(install: Install) -> None:
    install(
        "first",
        {"skillbench.check_kinds": {"file_says": f"{MODULE}:FILE_SAYS"}},
        {f"{MODULE}.py": SOURCE},
    )
    install("second", {"skillbench.check_kinds": {"file_says": f"{MODULE}:FILE_SAYS"}}, {})
    with pytest.raises(
        PluginError, match=r"'file_says' is also registered by distribution \w+ 1\.0"
    ):
        plugin_kinds()
