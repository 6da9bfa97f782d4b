"""The formats `skillbench report RUN --format F` renders a finished run in, by name: each
is a `ReportFormat`, a function from the run folder to the text written on stdout. A new format
is a module beside this one and one line in FORMATS (each renderer is imported when it is used,
so the CLI's start does not pay for all of them), or, from another package, a function in the
entry-point group `skillbench.report_formats`; it must pass report/conformance.py."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeAlias, TypeGuard

from skillbench.plugins import REPORT_FORMAT_GROUP, function, load_group
from skillbench.results.run_folder import RunFolder

ReportFormat: TypeAlias = Callable[[RunFolder], str]


def _terminal(run: RunFolder) -> str:
    from skillbench.report.terminal import report_lines
    from skillbench.util.scrub import printable

    # a line may carry text from a model, a sandbox or an asset: scrubbed and escaped
    return "".join(printable(line) + "\n" for line in report_lines(run.summary))


def _json(run: RunFolder) -> str:
    import json

    import msgspec

    return json.dumps(msgspec.to_builtins(run.summary), indent=2) + "\n"


def _junit(run: RunFolder) -> str:
    from skillbench.report.junit import eval_junit

    return eval_junit(run.summary)


def _markdown(run: RunFolder) -> str:
    from skillbench.report.markdown import markdown

    return markdown(run)


def _html(run: RunFolder) -> str:
    from skillbench.report.html import render

    return render(run)


FORMATS: dict[str, ReportFormat] = {
    "terminal": _terminal,  # the report `eval` prints (report/terminal.py)
    "json": _json,  # summary.json
    "junit": _junit,  # one test case per row, for CI
    "markdown": _markdown,  # a pull-request comment
    "html": _html,  # the self-contained report.html
}


_accept = function("a function from a run folder to text")


@functools.cache
def plugin_formats() -> dict[str, ReportFormat]:
    """The report formats installed packages register (read once, on first use)."""
    found = load_group(REPORT_FORMAT_GROUP, FORMATS, _accept)
    return {name: obj for name, obj in found.items() if _is_format(obj)}


def _is_format(obj: object) -> TypeGuard[ReportFormat]:  # load_group checked it
    return _accept("", obj) is None


def formats() -> dict[str, ReportFormat]:
    """Every report format by name: the built-ins, then the packages'."""
    return {**FORMATS, **plugin_formats()}
