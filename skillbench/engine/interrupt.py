"""Stopping a run on a signal: the first Ctrl-C (or SIGTERM, as CI cancelling a job or
`timeout` sends) cancels it, so every session's cleanup runs and the journal says what is done;
a second one exits at once, after removing every sandbox and workspace volume this process
made, with one line and the first signal's exit code (130, or 143)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

from skillbench.sandbox import stop_all

T = TypeVar("T")
# (SIGHUP: a terminal closed or an ssh session dropped, unless `nohup` ignores it)
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def caught(signums: tuple[int, ...] = SIGNALS) -> list[int]:
    """The signals a command takes: all of `signums` but a SIGHUP this process inherited as
    ignored (`nohup skillbench ...` must outlive its terminal)."""
    return [s for s in signums if s != signal.SIGHUP or signal.getsignal(s) != signal.SIG_IGN]


class Stop:
    """Runs the work of a run under the two-signal rule; `signals` holds what arrived."""

    def __init__(self, last_words: Callable[[int], None]):
        self.last_words = last_words  # prints the one line, given the first signal
        self.signals: list[int] = []

    @property
    def code(self) -> int:
        return 128 + self.signals[0]

    async def run(self, work: Awaitable[T]) -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()

        # A Python-level handler, not the loop's: it runs between any two bytecodes of the
        # main thread, so a second signal exits even while the loop is held by synchronous
        # work (importing a provider's SDK takes seconds), which a loop callback waits out.
        def arrived(signum: int, _frame: object) -> None:
            self.signals.append(signum)
            if len(self.signals) == 1:
                loop.call_soon_threadsafe(task.cancel)  # the sessions' own cleanup runs
                return
            stop_all()
            self.last_words(self.signals[0])
            os._exit(self.code)  # the journal is fsynced line by line: nothing is lost

        previous = {signum: signal.signal(signum, arrived) for signum in caught()}
        try:
            return await work
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
