"""A third-party package, as source text: one agent, one check kind and one report format
registered through skillbench's entry-point groups (docs/architecture.md, "Extending
skillbench")."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import write

DIST = "skillbench-stamp-plugin"
MODULE = "skillbench_stamp_plugin"

SOURCE = '''
"""A plugin agent that stamps the workspace, then runs the builtin loop; a check kind that
reads a workspace file; a report format of one line per row."""

from skillbench.agents.builtin.agent import BuiltinAgent
from skillbench.evals.kinds import Verdict


class StampingAgent(BuiltinAgent):
    name = "stamping"

    async def session(self, request):
        return _Stamped(await super().session(request))


class _Stamped:
    """The builtin session, with a stamp in the workspace before it runs."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):  # relay, ambient, skill_home, ...: the builtin session's
        return getattr(self.inner, name)

    async def run(self, sandbox, trace):
        done = await sandbox.exec(["sh", "-c", "echo stamped-by-plugin > .agent"], cwd=sandbox.workdir)
        assert done.ok, done.stderr
        return await self.inner.run(sandbox, trace)

    async def close(self):
        await self.inner.close()


class FileSays:
    name = "file_says"
    doc = "PATH=TEXT: the workspace file PATH holds TEXT"

    def parse(self, value):
        if not isinstance(value, str) or "=" not in value:
            raise ValueError(f"takes PATH=TEXT, got {value!r}")
        return value

    def lint(self, arg):
        return [] if arg.split("=", 1)[1] else ["empty TEXT: it passes whenever PATH exists"]

    async def run(self, arg, context):
        path, text = arg.split("=", 1)
        if context.sandbox is None:
            return Verdict(False, "no workspace to read")
        full = f"{context.sandbox.workdir}/{path}"
        if not await context.sandbox.exists(full):
            return Verdict(False, f"plugin: no {path}")
        found = text in await context.sandbox.read_text(full)
        return Verdict(found, f"plugin: {path} holds {text!r}" if found else f"plugin: {path} lacks {text!r}")


FILE_SAYS = FileSays()


def outcomes(run):
    """`skillbench report RUN --format outcomes`: the verdict, then one line per row."""
    rows = "".join(f"{r.case} vs {r.opponent}: {r.outcome} ({r.decided_by})\\n" for r in run.summary.rows)
    return f"verdict {run.summary.verdict}\\n{rows}"
'''

ENTRY_POINTS = {
    "skillbench.agents": {"stamping": f"{MODULE}:StampingAgent"},
    "skillbench.check_kinds": {"file_says": f"{MODULE}:FILE_SAYS"},
    "skillbench.report_formats": {"outcomes": f"{MODULE}:outcomes"},
}


def write_package(root: Path) -> Path:
    """A source tree pip can install: pyproject.toml and the module."""
    groups = "".join(
        f'\n[project.entry-points."{group}"]\n'
        + "".join(f'{name} = "{value}"\n' for name, value in points.items())
        for group, points in ENTRY_POINTS.items()
    )
    pyproject = (
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{DIST}"\nversion = "0.1"\n\n'
        f'[tool.setuptools]\npy-modules = ["{MODULE}"]\n{groups}'
    )
    (root / "pyproject.toml").parent.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject)
    (root / f"{MODULE}.py").write_text(SOURCE.lstrip("\n"))
    return root


def write_dist_info(
    site: Path, dist: str, points: dict[str, dict[str, str]], modules: dict[str, str]
) -> Path:
    """An installed distribution as importlib.metadata finds one on sys.path (what pip leaves
    in site-packages): its modules and `<dist>-<version>.dist-info` with its entry points."""
    info = "".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in named.items())
        for group, named in points.items()
    )
    return write(
        site,
        {
            **modules,
            f"{dist.replace('-', '_')}-1.0.dist-info/METADATA": (
                f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n"
            ),
            f"{dist.replace('-', '_')}-1.0.dist-info/entry_points.txt": info,
        },
    )
