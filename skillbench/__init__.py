"""skillbench: does an agent skill make an LLM agent better, and does it get picked?

The Python API (skillbench/api.py) is importable from here: `skillbench.evaluate(...)`,
`skillbench.Options`, `skillbench.errors.SkillbenchError`; docs/api.md shows it in use.
"""

from __future__ import annotations

import _signal

# Ctrl-C, SIGTERM or SIGHUP while the command decides whether it is the command waits (blocked, not
# lost) until the handler below is in place: a signal there printed a traceback through this
# file. A program importing skillbench gets its pending signal, in its own handler, at once.
_MASK = _signal.pthread_sigmask(
    _signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP}
)

import sys as _sys  # noqa: E402


def _run_as_the_command() -> bool:
    """Whether this process is the `skillbench` command: its console script, or `python -m`
    with skillbench or a module of it (`-m skillbench`, `-mskillbench.__main__`)."""
    if _sys.argv[:1] and _sys.argv[0].rsplit("/", 1)[-1] == "skillbench":
        return True
    if _sys.argv[:1] and _console_script(_sys.argv[0]):  # under another name: a link, a copy
        return True
    args = iter(_sys.orig_argv[1:])
    for arg in args:
        if arg == "--check-hash-based-pycs":
            next(args, None)
            continue
        if not arg.startswith("-") or arg in ("-", "--"):
            return False  # a script (or stdin) runs: not the command
        letters = arg[1:]  # single-letter options may be joined: -Bm skillbench
        for k, letter in enumerate(letters):
            if letter == "m":
                module = letters[k + 1 :] or next(args, "")
                return module.split(".")[0] == "skillbench"
            if letter == "c":
                return False
            if letter in "XW":  # takes a value: the rest of this argument, or the next one
                if k + 1 == len(letters):
                    next(args, None)
                break
    return False


def _console_script(path: str) -> bool:
    """Whether `path` is a regular file (never a pipe, which a read would wait on) that
    starts like the console script pip writes for skillbench."""
    import os
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            return b"from skillbench.__main__ import main" in fh.read(1024)
    except (OSError, ValueError):
        return False


if _run_as_the_command():
    # the command (console script or `python -m skillbench`) is starting: Ctrl-C from here on
    # is one line, not a traceback from inside an import (the entry point, __main__.py, takes
    # over once imported); a program that imports skillbench keeps its own handlers
    import os as _os

    def _early(signum: int, _frame: object) -> None:
        _os.write(2, b"skillbench: interrupted\n" if signum == 2 else b"skillbench: terminated\n")
        _os._exit(128 + signum)

    _signal.signal(_signal.SIGINT, _early)
    _signal.signal(_signal.SIGTERM, _early)
    if _signal.getsignal(_signal.SIGHUP) != _signal.SIG_IGN:  # (`nohup` keeps it ignored)
        _signal.signal(_signal.SIGHUP, _early)
_signal.pthread_sigmask(_signal.SIG_SETMASK, _MASK)

from typing import TYPE_CHECKING, Any  # noqa: E402  (after the handler, on purpose)

from skillbench.version import __version__  # noqa: E402

if TYPE_CHECKING:
    from skillbench.api import (
        GateOptions,
        Options,
        estimate,
        estimate_set,
        evaluate,
        evaluate_async,
        evaluate_set,
        evaluate_set_async,
        evaluate_triggers,
        evaluate_triggers_async,
        gate,
        generate_evals,
        measure_triggers,
        measure_triggers_async,
        read_run,
        read_set,
        run_oracles,
        run_oracles_async,
    )
    from skillbench.engine.run import EvalResult
    from skillbench.engine.sets import CellResult, SetResult
    from skillbench.errors import SkillbenchError
    from skillbench.results.summary import Summary

_API = {
    "GateOptions": "skillbench.api",
    "Options": "skillbench.api",
    "estimate": "skillbench.api",
    "estimate_set": "skillbench.api",
    "evaluate": "skillbench.api",
    "evaluate_triggers": "skillbench.api",
    "gate": "skillbench.api",
    "generate_evals": "skillbench.api",
    "measure_triggers": "skillbench.api",
    "run_oracles": "skillbench.api",
    "evaluate_async": "skillbench.api",
    "evaluate_set": "skillbench.api",
    "evaluate_set_async": "skillbench.api",
    "CellResult": "skillbench.engine.sets",
    "SetResult": "skillbench.engine.sets",
    "evaluate_triggers_async": "skillbench.api",
    "measure_triggers_async": "skillbench.api",
    "run_oracles_async": "skillbench.api",
    "read_run": "skillbench.api",
    "read_set": "skillbench.api",
    "EvalResult": "skillbench.engine.run",
    "Summary": "skillbench.results.summary",
    "SkillbenchError": "skillbench.errors",
}
__all__ = [
    "CellResult",
    "EvalResult",
    "GateOptions",
    "Options",
    "SetResult",
    "SkillbenchError",
    "Summary",
    "__version__",
    "estimate",
    "estimate_set",
    "evaluate",
    "evaluate_async",
    "evaluate_set",
    "evaluate_set_async",
    "evaluate_triggers",
    "evaluate_triggers_async",
    "gate",
    "generate_evals",
    "measure_triggers",
    "measure_triggers_async",
    "read_run",
    "read_set",
    "run_oracles",
    "run_oracles_async",
]


def __getattr__(name: str) -> Any:
    # imported on first use: `import skillbench` (every CLI start, every checker's
    # `skillbench` in a sandbox) does not pay for the engine it may never run
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'skillbench' has no attribute {name!r}")
