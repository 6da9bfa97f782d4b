"""`report`, `view`, `compare`: a finished run folder rendered, served or set against another."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    check_output,
    command,
    err,
    out,
    write_page,
)
from skillbench.plugins import Names
from skillbench.report.formats import formats

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def cmd_report(args: argparse.Namespace) -> int:
    from skillbench.results.cellset import CellSetError, is_set_run
    from skillbench.results.run_folder import RunFolderError, load_run

    path = Path(args.run)
    try:
        if is_set_run(path):
            text = _set_report(path, args.cell, args.format)
        elif args.cell:
            raise UsageError(f"--cell {args.cell}: {path} is a single run, not a set run")
        else:
            text = formats()[args.format](load_run(path))
    except (RunFolderError, CellSetError) as exc:
        raise UsageError(str(exc)) from None
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_OK


def _set_report(path: Path, cell: str | None, fmt: str) -> str:
    """The matrix of a set run, or with --cell that cell's own report."""
    from skillbench.report.matrix import FORMATS as MATRIX
    from skillbench.results.set_folder import load_set

    folder = load_set(path)
    if cell is None:
        if fmt not in MATRIX:  # a package's format renders one run
            raise UsageError(
                f"--format {fmt} renders a single run; pick a cell with --cell ID, or one "
                f"of {', '.join(MATRIX)} for the whole set"
            )
        return MATRIX[fmt](folder)
    found = folder.cell(cell)
    if found.run is None:
        raise UsageError(f"--cell {cell}: has no finished run ({found.problem})")
    return formats()[fmt](found.run)


def cmd_view(args: argparse.Namespace) -> int:
    import webbrowser

    from skillbench.report.matrix import write_set_report
    from skillbench.report.serve import report_url, server_for
    from skillbench.results.cellset import CellSetError, is_set_run
    from skillbench.results.run_folder import RunFolderError, load_run
    from skillbench.results.set_folder import load_set

    run_dir = Path(args.run)
    cells: tuple[str, ...] = ()
    try:
        if is_set_run(run_dir):
            folder = load_set(run_dir)
            cells = tuple(Path(c.cell.run).as_posix() for c in folder.cells)
            for c in folder.cells:  # a cell's own page, where its eval did not leave one
                if c.run is not None and not (Path(c.run.path) / "report.html").is_file():
                    write_page(Path(c.run.path))
            write_set_report(run_dir)
        else:
            load_run(run_dir)
            if write_page(run_dir) is None:
                return EXIT_USAGE
    except (RunFolderError, CellSetError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{run_dir}: report.html not written: {exc.strerror or exc}") from None
    try:
        server = server_for(run_dir, args.port, cells)
    except OSError as exc:
        raise UsageError(
            f"--port {args.port}: cannot listen there ({exc.strerror or exc}); "
            "leave --port out for a free one"
        ) from None
    url = report_url(server)
    out(f"serving {run_dir} at {url} (Ctrl-C to stop)")
    if args.open and not webbrowser.open(url):
        err("note: no browser could be opened here; open the address yourself")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from skillbench.report import compare
    from skillbench.results.cellset import CellSetError, is_set_run
    from skillbench.results.run_folder import RunFolderError, load_run
    from skillbench.results.set_folder import load_set

    paths = Path(args.run_a), Path(args.run_b)
    sets = [is_set_run(p) for p in paths]
    if sets[0] != sets[1]:
        one, other = (paths[0], paths[1]) if sets[0] else (paths[1], paths[0])
        raise UsageError(
            f"{one} is a set run and {other} is not: compare two set runs, or one cell of "
            f"the set (its folder under {one}/cells/) with the run"
        )
    try:
        if sets[0]:
            pair = compare.compare_sets(load_set(paths[0]), load_set(paths[1]))
            lines, page = compare.set_compare_lines(pair), compare.set_compare_html(pair)
        else:
            diff = compare.compare_runs(load_run(paths[0]), load_run(paths[1]))
            lines, page = compare.compare_lines(diff), compare.compare_html(diff)
    except (RunFolderError, CellSetError) as exc:
        raise UsageError(str(exc)) from None
    for line in lines:
        out(line)
    if args.html:
        check_output(Path(args.html), "--html")
        try:
            Path(args.html).write_text(page, encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"--html {args.html}: could not write it: {exc.strerror or exc}"
            ) from None
        out(f"html: {args.html}")
    return EXIT_OK


def register_report(sub: Subparsers) -> None:
    p = command(
        sub,
        "report",
        cmd_report,
        "render a finished run in any format",
        "Render a finished run folder as the terminal report, summary JSON, JUnit XML, a "
        "markdown PR comment (verdict, why, the rows that are not ties) or the self-contained "
        "report.html, on stdout. Built from the run folder alone. A set run folder (a library "
        "or an agents × models matrix) renders as its matrix of cells; --cell ID renders one "
        "cell's own report.",
    )
    p.add_argument("run", metavar="RUN", help="a run folder, or a set run folder (set.json)")
    p.add_argument(
        "--cell",
        metavar="ID",
        help="of a set run: render this cell's own report (ids: skill@agent@model)",
    )
    p.add_argument(
        "--format",
        choices=Names(formats),
        default="terminal",
        help="what to render (default terminal; installed packages may add formats)",
    )


def register_view(sub: Subparsers) -> None:
    p = command(
        sub,
        "view",
        cmd_view,
        "serve a run's report.html on 127.0.0.1",
        "Build the run folder's report.html if needed and serve the folder on 127.0.0.1 (a "
        "free port unless --port) until Ctrl-C; the address is printed. A set run is served "
        "as its grid, each cell opening its own report.",
    )
    p.add_argument("run", metavar="RUN", help="a run folder")
    p.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    p.add_argument("--open", action="store_true", help="open a browser too, when there is one")


def register_compare(sub: Subparsers) -> None:
    p = command(
        sub,
        "compare",
        cmd_compare,
        "what changed between two runs, row by row",
        "Show the verdicts of two runs side by side and every row whose outcome changed "
        "(e.g. v3 and v4 of a skill, or two models), and the rows only one run has. Of two "
        "set runs: cell by cell, each cell's verdicts, net lifts and changed rows.",
    )
    p.add_argument("run_a", metavar="RUN_A", help="the earlier run folder")
    p.add_argument("run_b", metavar="RUN_B", help="the later run folder")
    p.add_argument("--html", metavar="FILE", help="also write the comparison as HTML")
