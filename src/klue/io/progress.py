"""The progress bars on stderr: one look for every long loop (training, pretraining, prompting, the PII pass,
shard writing, a benchmark), and the download bar's columns.

    bar = ProgressBar("train", total=1200, done=state.step, enabled=is_main)
    bar.update(step, info="loss 0.4120 · 1,830 ex/s")
    bar.close()  # or: with contextlib.closing(ProgressBar(...)) as bar

A bar shows its label, the bar (a spinner when the total is not known), done of total (or bytes), the
caller's `info` text, the elapsed time and the ETA. A disabled bar does nothing, so callers never branch on
it. rich is imported only when a bar is shown (`klue score` starts without it).
"""

from __future__ import annotations

from typing import Any


class ProgressBar:
    """One rich progress bar on stderr (or `console`), or nothing when not `enabled`.

    `total` None: the amount of work is not known ahead (a spinner, no ETA). `in_bytes`: done and total
    are bytes. `transient`: the bar is removed when closed. `terminal_only`: no bar where the console is
    not a terminal (a log file then keeps only the messages)."""

    def __init__(self, label: str, total: int | None = None, *, done: int = 0, enabled: bool = True,
                 in_bytes: bool = False, transient: bool = False, terminal_only: bool = False,
                 console: Any = None) -> None:
        self._bar: Any = None
        if not enabled:
            return
        from rich.console import Console
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

        console = console if console is not None else Console(stderr=True)
        known = total is not None
        columns: list[Any] = [SpinnerColumn(), TextColumn("[bold]{task.description}")]
        if known:
            columns += [BarColumn(), DownloadColumn() if in_bytes else MofNCompleteColumn()]
        columns += [TextColumn("{task.fields[info]}"), TimeElapsedColumn()]
        if known:
            columns += [TextColumn("ETA"), TimeRemainingColumn()]
        self._bar = Progress(*columns, console=console, transient=transient,
                             disable=terminal_only and not console.is_terminal)
        self._task = self._bar.add_task(label, total=total, completed=done, info="")
        self._bar.start()

    def update(self, done: int | None = None, *, advance: int | None = None, info: str | None = None,
               label: str | None = None) -> None:
        """Set the amount done (or `advance` it); `info` and `label` replace the shown text, else it stays."""
        if self._bar is None:
            return
        fields: dict[str, Any] = {}
        if done is not None:
            fields["completed"] = done
        if advance is not None:
            fields["advance"] = advance
        if info is not None:
            fields["info"] = info
        if label is not None:
            fields["description"] = label
        self._bar.update(self._task, **fields)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def download_bars(console: Any, *, terminal_only: bool = False) -> Any:
    """A rich Progress for the downloader (klue.io.download adds one task per file): description, bar, bytes
    and transfer speed, removed when done."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                    console=console, transient=True, disable=terminal_only and not console.is_terminal)
