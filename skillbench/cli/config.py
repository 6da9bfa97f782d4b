"""`config`: the effective settings and where each came from."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.cli.common import EXIT_OK, command, out, settings_for

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def cmd_config(args: argparse.Namespace) -> int:
    loaded = settings_for(Path(args.path), args, ())
    import msgspec

    values = msgspec.to_builtins(loaded.settings)
    out(f"config file: {loaded.path or 'none found'}")
    for name, value in values.items():
        out(f"{name} = {value!r}    ({loaded.sources.get(name, 'default')})")
    return EXIT_OK


def register_config(sub: Subparsers) -> None:
    p = command(
        sub,
        "config",
        cmd_config,
        "show the effective settings and where each came from",
        "Show every setting's effective value and its source: a flag, SKILLBENCH_MODEL, "
        "skillbench.toml or [tool.skillbench] in pyproject.toml (the nearest enclosing one), "
        "or the built-in default.",
    )
    p.add_argument("path", nargs="?", default=".", help="where to look for config (default .)")
