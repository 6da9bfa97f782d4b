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
from skillbench.evals.kinds import Kind, kind_docs, kinds, plugin_kinds
from skillbench.evals.kinds.conformance import KindConformance
from skillbench.evals.load import load_assets
from skillbench.plugins import PluginError
from skillbench.report.conformance import ReportFormatConformance
from skillbench.report.formats import ReportFormat, formats, plugin_formats
from skillbench.results.run_folder import RunFolder, load_run
from skillbench.results.transcript import Transcript
from skillbench.sandbox import plugin_backends
from tests.helpers import make_skill
from tests.plugin_package import ENTRY_POINTS, MODULE, SOURCE, write_dist_info

Install = Callable[[str, dict[str, dict[str, str]], dict[str, str]], None]
REGISTRIES = (agents, plugin_kinds, plugin_formats, plugin_backends)


def _clear() -> None:
    for registry in REGISTRIES:
        registry.cache_clear()


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """Put distributions on sys.path, as an install does, with the registries unread."""
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    names: list[str] = []

    def put(dist: str, points: dict[str, dict[str, str]], modules: dict[str, str]) -> None:
        write_dist_info(site, dist, points, modules)
        names.extend(Path(m).stem for m in modules)
        _clear()

    yield put
    _clear()
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


def test_a_packages_report_format_renders_a_run(install: Install, tmp_path: Path, capsys) -> None:
    from tests.report.test_report import OUTCOMES, fixed_run

    install("stamp", ENTRY_POINTS, {f"{MODULE}.py": SOURCE})
    run = fixed_run(tmp_path / "run", OUTCOMES)
    assert main(["report", str(run), "--format", "outcomes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "verdict INCONCLUSIVE"
    assert sorted(lines[1:]) == sorted(
        f"{case} vs baseline: {outcome} ({'judge' if outcome == 'tie' else 'checks'})"
        for case, outcome in OUTCOMES.items()
    )
    with pytest.raises(SystemExit) as refused:  # argparse: not a choice, listing the package's
        main(["report", str(run), "--format", "outcomez"])
    assert refused.value.code == 2
    assert "choose from 'terminal', 'json', 'junit', 'markdown', 'html', 'outcomes'" in (
        capsys.readouterr().err
    )


NEW_GROUPS = [
    (
        {"skillbench.report_formats": {"cls": "brokenmod:Fmt"}},
        {"brokenmod.py": "class Fmt:\n    pass\n"},
        ["report", "RUN", "--format", "cls"],
        "entry point 'cls' in group skillbench.report_formats (distribution broken 1.0): "
        "brokenmod:Fmt is a type, not a function from a run folder to text",
    ),
    (
        {"skillbench.importers": {"harbor": "brokenmod:imp"}},
        {"brokenmod.py": "def imp(src, into=None):\n    pass\n"},
        ["import", "harbor", "x", "--check"],
        "entry point 'harbor' in group skillbench.importers (distribution broken 1.0): 'harbor' "
        "is a built-in name; the package must register another name",
    ),
    (
        {"skillbench.model_providers": {"acme": "brokenmod:ACME"}},
        {"brokenmod.py": "ACME = {'make': None}\n"},
        ["eval", "SKILL", "--model", "acme/m1", "--plan"],
        "entry point 'acme' in group skillbench.model_providers (distribution broken 1.0): "
        "brokenmod:ACME is a dict, not a skillbench.models.Provider",
    ),
]


@pytest.mark.parametrize(("points", "modules", "argv", "message"), NEW_GROUPS)
def test_a_broken_provider_importer_or_format_is_one_line(
    install: Install, tmp_path: Path, capsys, points, modules, argv, message
) -> None:
    from skillbench.importers.formats import plugin_importers
    from skillbench.models import plugin_providers

    plugin_importers.cache_clear()
    plugin_providers.cache_clear()
    try:
        install("broken", points, modules)
        folder = make_skill(
            tmp_path, "s", {"evals/cases/a.yaml": "task: t\nchecks:\n  - file_exists: x\n"}
        )
        argv = [str(folder) if a == "SKILL" else str(tmp_path) if a == "RUN" else a for a in argv]
        code = main(argv)
        assert (code, capsys.readouterr().err) == (2, f"skillbench: error: {message}\n")
    finally:
        plugin_importers.cache_clear()
        plugin_providers.cache_clear()


def test_a_packages_sandbox_provider_is_chosen_by_name(
    install: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[sandbox] provider` names a package's provider; an unknown one is one line naming
    the file:line and the known providers."""
    from skillbench.config import ConfigError, load_settings
    from skillbench.sandbox import chosen, images_of

    install(
        "acme-sandbox",
        {"skillbench.sandbox_providers": {"acme": "acmebox:BACKEND"}},
        {
            "acmebox.py": "class Images:\n    sandbox_image = 'acme/sandbox'\n\n\n"
            "class Backend:\n    def provider(self):\n        raise RuntimeError('not here')\n\n"
            "    def images(self):\n        return Images()\n\n\nBACKEND = Backend()\n"
        },
    )
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)  # (settings are read where skillbench runs)
    config = project / "skillbench.toml"
    config.write_text('parallel = 2\n\n[sandbox]\ndisk = "1g"\nprovider = "acme"\n')
    try:
        load_settings(project)
        assert (chosen(), images_of().sandbox_image) == ("acme", "acme/sandbox")
        config.write_text('[sandbox]\nprovider = "acmee"\n')
        with pytest.raises(ConfigError) as caught:
            load_settings(project)
        assert str(caught.value) == (
            f"{config}:2: sandbox.provider: no sandbox provider 'acmee' (providers: podman, "
            "acme); did you mean 'acme'?"
        )
    finally:
        config.write_text("")
        load_settings(project)  # back to the default provider
    assert chosen() == "podman"


class TestAPackagesCheckKind(KindConformance):
    """The package's kind passes the suite every built-in kind passes."""

    @pytest.fixture
    def kind(self, install: Install) -> Kind:
        install("stamp", ENTRY_POINTS, {f"{MODULE}.py": SOURCE})
        return kinds()["file_says"]

    @pytest.fixture
    def argument(self) -> object:
        return "out.txt=hi"


class TestAPackagesReportFormat(ReportFormatConformance):
    @pytest.fixture
    def report_format(self, install: Install) -> ReportFormat:
        install("stamp", ENTRY_POINTS, {f"{MODULE}.py": SOURCE})
        return formats()["outcomes"]

    @pytest.fixture
    def run_folder(self, tmp_path: Path) -> RunFolder:
        from tests.report.test_report import OUTCOMES, fixed_run

        return load_run(fixed_run(tmp_path / "run", OUTCOMES))
