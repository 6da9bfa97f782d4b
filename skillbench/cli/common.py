"""What every command module shares: exit codes, the one-line usage error, scrubbed output,
settings loading and the checks of flags several commands take."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.errors import SkillbenchError
from skillbench.util.scrub import printable

if TYPE_CHECKING:
    from typing import TypeAlias

    from skillbench.config import Loaded

    # what `add_subparsers()` returns: every command's parser hangs from it
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_INCONCLUSIVE = 3  # eval: too few decided units for any verdict (not a FAIL, not a pass)

Handler = Callable[[argparse.Namespace], int]


class UsageError(SkillbenchError):
    """A user mistake: printed as one line, exit 2."""


def out(line: str = "") -> None:
    # every line may carry text from a model, a sandbox or an asset: scrubbed and escaped
    print(printable(line), flush=True)


def err(line: str) -> None:
    print(printable(line), file=sys.stderr, flush=True)


def command(
    sub: Subparsers,
    name: str,
    handler: Handler,
    help: str,
    description: str,
) -> argparse.ArgumentParser:
    """A command's parser, with the handler `main` calls for it."""
    p = sub.add_parser(name, help=help, description=description)
    p.set_defaults(handler=handler)
    return p


def settings_for(start: Path, args: argparse.Namespace, names: Sequence[str]) -> Loaded:
    from skillbench.config import ConfigError, load_settings

    flags = {name: getattr(args, name, None) for name in names}
    try:
        return load_settings(start, flags)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def check_output(path: Path, flag: str) -> None:
    """Refuse, before any work, an output file that could not be written at the end."""
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a folder; name a file")
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{flag} {path}: the folder {folder} is not writable")


def write_page(run_dir: Path) -> Path | None:
    """report.html in the run folder; a page that cannot be written is a warning, not a
    lost run (everything it shows is in the folder)."""
    from skillbench.report.html import write_report
    from skillbench.results.run_folder import RunFolderError

    try:
        return write_report(run_dir)
    except (OSError, RunFolderError) as exc:
        err(f"skillbench: warning: report.html not written: {exc}")
        return None
