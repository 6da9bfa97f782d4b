"""The `skillbench` command line: argument parsing and rendering only.

One module per command or command group, each declaring its arguments beside its handler
(`register_<command>`) and calling the Python API (skillbench/api.py) or a library function;
this module orders them into one parser and maps the errors (skillbench/errors.py) to one
line and an exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from skillbench.cli.cluster import register_cluster
from skillbench.cli.common import EXIT_OK, err
from skillbench.cli.config import register_config
from skillbench.cli.doctor import register_doctor, register_image
from skillbench.cli.eval import register_eval
from skillbench.cli.gen import register_gen
from skillbench.cli.imports import register_import
from skillbench.cli.reports import register_compare, register_report, register_view
from skillbench.cli.skills import register_catalog, register_check, register_digest
from skillbench.cli.team import register_gate, register_publish, register_receipts
from skillbench.cli.triggers import register_triggers
from skillbench.cli.tune import register_tune
from skillbench.errors import SkillbenchError, Terminated
from skillbench.version import __version__

# the order `skillbench --help` lists the commands in
REGISTER = (
    register_check,
    register_digest,
    register_catalog,
    register_eval,
    register_triggers,
    register_import,
    register_gen,
    register_tune,
    register_publish,
    register_gate,
    register_report,
    register_view,
    register_compare,
    register_receipts,
    register_config,
    register_doctor,
    register_image,
    register_cluster,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillbench",
        description="Measure whether an agent skill makes an LLM agent better, and whether "
        "it gets picked for the right requests.",
        epilog="Run `skillbench COMMAND --help` for each command's options.",
    )
    parser.add_argument("--version", action="version", version=f"skillbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTER:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `skillbench` console script."""
    try:
        # (inside: a registry a flag's choices come from may read a broken plugin)
        args = build_parser().parse_args(argv)
        return int(args.handler(args))
    except SkillbenchError as exc:  # each says its own lines and exit code
        for line in exc.lines():
            err(line)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        if isinstance(exc, Terminated):
            err("skillbench: terminated")
            return 128 + exc.signum
        err("skillbench: interrupted")
        return 130
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """The reader of stdout went away (`skillbench report RUN | head`): it had what it wanted,
    so exit quietly; stdout now points at /dev/null so the interpreter's last flush of what is
    still buffered finds no closed pipe (and prints no traceback)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK
