"""Progress of long work, on a terminal and in a log: the one progress display every long loop uses.

On a terminal, a rich bar: what, a bar, done/total, the caller's info (loss, speed), elapsed, ETA. Anywhere
else (a log file, a pipe, a benchmark cell's log.txt), a bar shows nothing until the end, so plain lines
instead, one when another 10% is done or 30 s have passed since the last line, whichever comes first, and
one where the work ended:

    train: 1,200/10,000 (12%) loss 0.5123, 1,234 ex/s; 0:01:05 elapsed, ETA 0:07:57

A total that is not known ahead (`total=None`) gives lines every 30 s with the count alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from rich.console import Console

from klue.io.console import make_console

EVERY_S = 30.0  # a plain line at least this often while work goes on
EVERY_FRACTION = 0.10  # ... and whenever this much more of the total is done


def _clock_text(seconds: float) -> str:
    return str(timedelta(seconds=round(max(0.0, seconds))))


class Progress:
    """`update(done, info)` / `advance(n, info)` as work goes, `close()` at the end (in a `finally`).
    Disabled (`enabled=False`) it does nothing, for non-main processes and quiet runs."""

    def __init__(self, description: str, total: int | None, *, done: int = 0, enabled: bool = True,
                 console: Console | None = None, transient: bool = False,
                 clock: Callable[[], float] = time.monotonic, every_s: float = EVERY_S,
                 every_fraction: float = EVERY_FRACTION) -> None:
        self.description = description
        self.total = total
        self.done = done
        self.info = ""
        self.enabled = enabled
        self.console = console or make_console(stderr=True)
        self._clock = clock
        self._every_s = every_s
        self._every_fraction = every_fraction
        self._started = clock()
        self._first = done  # what was done before this run (a resumed run's rate counts only its own work)
        self._shown_at, self._shown_done = self._started, done
        self._bar: Any = None
        if enabled and self.console.is_terminal:
            self._start_bar(transient)

    def _start_bar(self, transient: bool) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        counts = [BarColumn(), MofNCompleteColumn()] if self.total is not None else [SpinnerColumn()]
        self._bar = RichProgress(TextColumn("[bold]{task.description}"), *counts, TextColumn("{task.fields[info]}"),
                                 TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                 console=self.console, transient=transient)
        self._task = self._bar.add_task(self.description, total=self.total, completed=self.done, info="")
        self._bar.start()

    def update(self, done: int, info: str | None = None, description: str | None = None) -> None:
        """`done` so far; `info` replaces the info text (None keeps it); `description` renames the work."""
        if not self.enabled:
            return
        self.done = done
        self.info = self.info if info is None else info
        self.description = description or self.description
        if self._bar is not None:
            self._bar.update(self._task, completed=done, info=self.info, description=self.description)
        elif self._due():
            self._line()

    def advance(self, n: int = 1, info: str | None = None) -> None:
        self.update(self.done + n, info)

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self.done != self._shown_done:  # where it ended, unless just shown (or nothing was done: a failure)
            self._line()
        self.enabled = False

    # -- plain lines ----------------------------------------------------------------------------------------

    def _due(self) -> bool:
        if self._clock() - self._shown_at >= self._every_s:
            return True
        return bool(self.total) and (self.done - self._shown_done) >= self._every_fraction * self.total  # type: ignore[operator]

    def line(self) -> str:
        """The plain line for where the work stands now."""
        now = self._clock()
        elapsed = now - self._started
        count = f"{self.done:,}/{self.total:,} ({100 * self.done / self.total:.0f}%)" if self.total else f"{self.done:,}"
        parts = [f"{self.description}: {count}"]
        if self.info:
            parts.append(f" {self.info}")
        parts.append(f"; {_clock_text(elapsed)} elapsed")
        made = self.done - self._first
        if self.total and 0 < made and self.done < self.total:
            parts.append(f", ETA {_clock_text(elapsed / made * (self.total - self.done))}")
        return "".join(parts)

    def _line(self) -> None:
        self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)
        self._shown_at, self._shown_done = self._clock(), self.done
