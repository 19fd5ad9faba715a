"""Progress of long work, on a terminal and in a log: the one progress display every long loop uses
(training, pretraining, prompting, embedding, the PII pass, shard writing, a benchmark), and the download
bar's columns.

    bar = ProgressBar("train", total=1200, done=state.step, enabled=is_main)
    bar.update(step, info="loss 0.4120 · 1,830 ex/s")
    bar.close()  # or: with contextlib.closing(ProgressBar(...)) as bar

On a terminal, a rich bar: its label, the bar (a spinner when the total is not known), done of total (or
bytes), the caller's `info` text, the elapsed time and the ETA. Anywhere else (a log file, a pipe, a
benchmark cell's log.txt) a bar would show nothing until the end, so plain lines instead, one when another
10% is done or 30 s have passed since the last line, whichever comes first, and one where the work ended:

    train: 1,200/10,000 (12%) loss 0.5123, 1,234 ex/s; 0:01:05 elapsed, ETA 0:07:57

A total that is not known ahead (`total=None`) gives lines every 30 s with the count alone. A disabled bar
does nothing, so callers never branch on it. rich's bar is imported only when one is shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from klue.io.console import make_console

EVERY_S = 30.0  # a plain line at least this often while work goes on
EVERY_FRACTION = 0.10  # ... and whenever this much more of the total is done


def _clock_text(seconds: float) -> str:
    return str(timedelta(seconds=round(max(0.0, seconds))))


class ProgressBar:
    """One progress display on stderr (or `console`), or nothing when not `enabled`.

    `total` None: the amount of work is not known ahead (a spinner, no ETA). `in_bytes`: done and total
    are bytes. `transient`: the bar is removed when closed. `terminal_only`: nothing where the console is
    not a terminal (no plain lines either: a log file then keeps only the messages)."""

    def __init__(self, label: str, total: int | None = None, *, done: int = 0, enabled: bool = True,
                 in_bytes: bool = False, transient: bool = False, terminal_only: bool = False,
                 console: Any = None, clock: Callable[[], float] = time.monotonic, every_s: float = EVERY_S,
                 every_fraction: float = EVERY_FRACTION) -> None:
        self.label = label
        self.total = total
        self.done = done
        self.info = ""
        self._bar: Any = None
        self._clock = clock
        self._every_s = every_s
        self._every_fraction = every_fraction
        self._started = clock()
        self._first = done  # what was done before this run (a resumed run's rate counts only its own work)
        self._shown_at, self._shown_done = self._started, done
        self.console = console if console is not None else (make_console(stderr=True) if enabled else None)
        terminal = bool(enabled and self.console is not None and self.console.is_terminal)
        self._plain = enabled and not terminal and not terminal_only
        if terminal:
            self._start_bar(in_bytes, transient)

    def _start_bar(self, in_bytes: bool, transient: bool) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        known = self.total is not None
        columns: list[Any] = [SpinnerColumn(), TextColumn("[bold]{task.description}")]
        if known:
            columns += [BarColumn(), DownloadColumn() if in_bytes else MofNCompleteColumn()]
        columns += [TextColumn("{task.fields[info]}"), TimeElapsedColumn()]
        if known:
            columns += [TextColumn("ETA"), TimeRemainingColumn()]
        self._bar = Progress(*columns, console=self.console, transient=transient)
        self._task = self._bar.add_task(self.label, total=self.total, completed=self.done, info="")
        self._bar.start()

    def update(self, done: int | None = None, *, advance: int | None = None, info: str | None = None,
               label: str | None = None) -> None:
        """Set the amount done (or `advance` it); `info` and `label` replace the shown text, else it stays."""
        if self._bar is None and not self._plain:
            return
        if done is not None:
            self.done = done
        if advance is not None:
            self.done += advance
        self.info = self.info if info is None else info
        self.label = label or self.label
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, info=self.info, description=self.label)
        elif self._due():
            self._line()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self._plain and self.done != self._shown_done:  # where it ended, unless just shown or nothing done
            self._line()
        self._plain = False

    # -- plain lines ----------------------------------------------------------------------------------------

    def _due(self) -> bool:
        if self._clock() - self._shown_at >= self._every_s:
            return True
        return self.total is not None and self.total > 0 and (
            self.done - self._shown_done) >= self._every_fraction * self.total

    def line(self) -> str:
        """The plain line for where the work stands now."""
        elapsed = self._clock() - self._started
        total = self.total
        count = f"{self.done:,}/{total:,} ({100 * self.done / total:.0f}%)" if total else f"{self.done:,}"
        parts = [f"{self.label}: {count}"]
        if self.info:
            parts.append(f" {self.info}")
        parts.append(f"; {_clock_text(elapsed)} elapsed")
        made = self.done - self._first
        if total and 0 < made and self.done < total:
            parts.append(f", ETA {_clock_text(elapsed / made * (total - self.done))}")
        return "".join(parts)

    def _line(self) -> None:
        assert self.console is not None  # plain lines are shown only by an enabled display
        self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)
        self._shown_at, self._shown_done = self._clock(), self.done


def download_bars(console: Any, *, terminal_only: bool = False) -> Any:
    """A rich Progress for the downloader (klue.io.download adds one task per file): description, bar, bytes
    and transfer speed, removed when done."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                    console=console, transient=True, disable=terminal_only and not console.is_terminal)
