"""Where klue's messages and tables go, on a terminal and elsewhere.

On a terminal, rich as usual: wrapped to the window, colours, live progress bars. Elsewhere (a log file, a
pipe, a benchmark cell's log.txt) rich would wrap every line at 80 columns, breaking a path or a number in
two; there, `make_console` wraps nothing (`soft_wrap`) and gives tables room for their natural width, so
every message is one line a script or a reader can search.
"""

from __future__ import annotations

from rich.console import Console

PLAIN_WIDTH = 1000  # room for a table's natural width where there is no window to fit


def make_console(stderr: bool = False) -> Console:
    """A rich Console on stdout (or stderr) that never breaks a line where no terminal reads it."""
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, soft_wrap=True, width=max(console.width, PLAIN_WIDTH))
