"""The formats `skillbench report RUN --format F` renders a finished run in, by name: each
is a function from the run folder to the text written on stdout. A new format is a module
beside this one and one line in FORMATS (each renderer is imported when it is used, so the
CLI's start does not pay for all of them)."""

from __future__ import annotations

from collections.abc import Callable

from skillbench.results.run_folder import RunFolder


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


FORMATS: dict[str, Callable[[RunFolder], str]] = {
    "terminal": _terminal,  # the report `eval` prints (report/terminal.py)
    "json": _json,  # summary.json
    "junit": _junit,  # one test case per row, for CI
    "markdown": _markdown,  # a pull-request comment
    "html": _html,  # the self-contained report.html
}
