"""The `skillbench` command: the console script and `python -m skillbench` (docs/trust.md).

Its first instructions make Ctrl-C (and SIGTERM, and SIGHUP unless `nohup` ignores it) end
the process with one line and the signal's exit code, 130 (143, 129): importing the CLI takes
a while, and a KeyboardInterrupt raised inside an import is a traceback. Once the CLI is
loaded, Ctrl-C raises KeyboardInterrupt again (SIGTERM and SIGHUP its subclass Terminated),
so each command's cleanup runs (and a run's two-signal rule, engine/interrupt.py, takes
over); after it returns, the process ends at once: an interrupted run has done its cleanup,
and the interpreter's shutdown would wait on any worker thread still blocked in a call (a
podman or provider request), which kept an
interrupted skillbench alive for seconds after its line."""

import contextlib
import os
import signal
import sys

_SAID: dict[int, bytes] = {
    signal.SIGINT: b"skillbench: interrupted\n",
    signal.SIGTERM: b"skillbench: terminated\n",
    signal.SIGHUP: b"skillbench: terminated\n",
}
# (a SIGHUP `nohup` set to be ignored stays ignored)
_TAKEN = [s for s in _SAID if s != signal.SIGHUP or signal.getsignal(s) != signal.SIG_IGN]


def _at_once(signum: int, _frame: object) -> None:
    os.write(2, _SAID[signum])
    os._exit(128 + signum)  # nothing has started that needs undoing


def _stop_at_once() -> None:
    for signum in _TAKEN:
        signal.signal(signum, _at_once)


_stop_at_once()


def main() -> int:
    """Entry point of the `skillbench` console script."""
    from skillbench.cli import main as run
    from skillbench.errors import Terminated

    def terminated(signum: int, _frame: object) -> None:
        raise Terminated(signum)  # as Ctrl-C: every command's cleanup runs (sandboxes removed)

    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in _TAKEN[1:]:
            signal.signal(signum, terminated)
        code = run()
    except KeyboardInterrupt as exc:  # before the CLI's own handling was in place
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        os.write(2, _SAID[signum])
        code = 128 + signum
    finally:
        _stop_at_once()
    if code in (128 + s for s in _SAID):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
