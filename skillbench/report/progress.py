"""Progress while sessions run: a live line on a terminal, one line per session otherwise.
Written to stderr so `--json` output on stdout stays clean."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.text import Text

from skillbench.results.records import SessionRecord
from skillbench.util.scrub import printable


class ProgressDisplay:
    """Sessions done / running / queued, elapsed time and spend so far."""

    def __init__(self, quiet: bool = False, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.quiet = quiet
        self.live: Live | None = None
        self.total = self.done = self.running = 0
        self.spend = 0.0
        self.start = time.monotonic()

    def _line(self) -> Text:
        queued = self.total - self.done - self.running
        elapsed = int(time.monotonic() - self.start)
        return Text(
            f"sessions: {self.done} done · {self.running} running · {queued} queued · "
            f"{elapsed // 60}m{elapsed % 60:02d}s · spend ${self.spend:.2f}"
        )

    def planned(self, total: int, done: int) -> None:
        # a set run's cells each say what they plan: the display counts them all
        again = self.total > 0 or self.live is not None
        self.total, self.done = self.total + total, self.done + done
        if again and self.live is not None:
            return
        if not self.quiet and self.console.is_terminal:
            self.live = Live(
                self._line(),
                console=self.console,
                refresh_per_second=4,
                transient=True,
                get_renderable=self._line,
            )
            self.live.start()
        elif not self.quiet:
            print(f"running {total - done} of {total} sessions", file=sys.stderr, flush=True)

    def started(self, key: str) -> None:
        self.running += 1

    def finished(self, record: SessionRecord, spend: float) -> None:
        self.running -= 1
        self.done += 1
        self.spend = spend
        if self.quiet:
            return
        what = record.outcome + (f" ({record.error})" if record.error else "")
        # a reused session did not run now: its turns and time are another run's
        how = (
            f"reused from run {record.reused_from} (not run again)"
            if record.reused_from
            else f"{record.turns} turns · {record.seconds:.1f}s"
        )
        # the error is a provider's or a sandbox's text: scrubbed, escaped, never markup
        line = printable(f"[{self.done}/{self.total}] {record.key}: {what} · {how}")
        if self.live is not None:
            self.live.console.print(Text(line))
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
