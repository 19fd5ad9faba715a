"""The one progress bar: what it shows, and that a disabled one (or one off a terminal, when asked) shows nothing."""

from __future__ import annotations

import io
import re

from rich.console import Console

from klue.io.progress import ProgressBar


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=120), out


def _last_frame(out: io.StringIO) -> str:
    """The bar as last drawn: the text without terminal control sequences, its last non-empty line."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    return [line for line in re.split(r"[\r\n]", text) if line.strip()][-1]


def test_a_bar_shows_its_label_counts_and_info_and_keeps_the_info_between_updates() -> None:
    console, out = _console(True)
    bar = ProgressBar("train", 10, done=2, console=console)
    bar.update(5, info="loss 0.5000 · 12 ex/s")
    bar.update(6)
    bar.update(advance=1, label="eval")
    bar.close()
    last = _last_frame(out)
    assert "eval" in last and "7/10" in last and "loss 0.5000 · 12 ex/s" in last, last


def test_a_bar_of_unknown_length_and_one_in_bytes() -> None:
    console, out = _console(True)
    bar = ProgressBar("prepare", console=console)
    bar.update(info="3 shards")
    bar.close()
    assert "prepare" in out.getvalue() and "3 shards" in out.getvalue() and "/" not in out.getvalue()
    console, out = _console(True)
    bar = ProgressBar("pii", 2048, in_bytes=True, console=console)
    bar.update(1024)
    bar.close()
    assert "1.0/2.0 kB" in out.getvalue(), out.getvalue()


def test_a_disabled_bar_and_a_terminal_only_bar_off_a_terminal_show_nothing() -> None:
    console, out = _console(True)
    bar = ProgressBar("train", 10, enabled=False, console=console)
    bar.update(3, info="x", label="y")
    bar.close()
    assert out.getvalue() == ""
    console, out = _console(False)
    bar = ProgressBar("pii", 10, terminal_only=True, console=console)
    bar.update(3, info="x")
    bar.close()
    assert out.getvalue() == ""
    console, out = _console(False)
    bar = ProgressBar("benchmark", 10, console=console)  # a log file still gets the final state
    bar.update(3)
    bar.close()
    assert "3/10" in out.getvalue()
