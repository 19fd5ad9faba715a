"""The one progress display: the bar on a terminal (what it shows; a disabled one, or a terminal-only one off a
terminal, shows nothing), plain lines every 10% or 30 s and at the end in a log, never a wrapped line; and the
console that never breaks a path where no terminal reads it."""

from __future__ import annotations

import io
import re

from rich.console import Console

from klue.io.console import make_console
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
    bar = ProgressBar("benchmark", 10, console=console)  # a log file gets a plain line for the final state
    bar.update(3)
    bar.close()
    assert "3/10" in out.getvalue()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _log() -> tuple[Console, io.StringIO]:
    sink = io.StringIO()
    return Console(file=sink, force_terminal=False, width=80, soft_wrap=True), sink


def test_plain_lines_every_tenth_and_at_the_end() -> None:
    console, sink = _log()
    clock = Clock()
    progress = ProgressBar("train", 1000, console=console, clock=clock)
    for step in range(1, 1001):
        clock.now += 0.01
        progress.update(step, info=f"loss {1 / step:.4f}")
    progress.close()
    lines = sink.getvalue().splitlines()
    assert [line.split(" ")[1] for line in lines] == [f"{k * 100:,}/1,000" for k in range(1, 11)]
    assert lines[0] == "train: 100/1,000 (10%) loss 0.0100; 0:00:01 elapsed, ETA 0:00:09"
    assert lines[-1].startswith("train: 1,000/1,000 (100%) loss 0.0010; 0:00:10 elapsed")


def test_plain_lines_every_30_seconds_of_slow_work_and_a_resumed_eta() -> None:
    console, sink = _log()
    clock = Clock()
    progress = ProgressBar("train", 1000, done=500, console=console, clock=clock)
    for step in range(501, 521):  # 20 slow steps: 2% of the total, 10 s each
        clock.now += 10
        progress.update(step)
    progress.close()
    lines = sink.getvalue().splitlines()
    assert len(lines) == 1 + 200 // 30 and "ETA" in lines[0]
    assert lines[0] == "train: 503/1,000 (50%); 0:00:30 elapsed, ETA 1:22:50"  # its own 3 steps in 30 s


def test_an_unknown_total_and_a_disabled_display() -> None:
    console, sink = _log()
    clock = Clock()
    shards = ProgressBar("prepare", None, console=console, clock=clock)
    for n in range(1, 8):
        clock.now += 10
        shards.update(n, info="shards")
    shards.close()
    assert sink.getvalue().splitlines() == ["prepare: 3 shards; 0:00:30 elapsed", "prepare: 6 shards; 0:01:00 elapsed",
                                            "prepare: 7 shards; 0:01:10 elapsed"]
    quiet, sink = _log()
    off = ProgressBar("x", 10, console=quiet, enabled=False)
    off.update(10)
    off.close()
    assert sink.getvalue() == ""


def test_a_terminal_gets_a_bar_not_lines() -> None:
    sink = io.StringIO()
    terminal = Console(file=sink, force_terminal=True, width=100)
    progress = ProgressBar("train", 10, console=terminal)
    progress.update(10, info="done")
    progress.close()
    assert "━" in sink.getvalue() and "train: 10/10" not in sink.getvalue()


def test_where_no_terminal_reads_nothing_is_wrapped(capsys) -> None:
    path = "/a/very/long/directory/" + "nested/" * 20 + "results.json"
    console = make_console(stderr=True)
    console.print(f"2,403 train / 597 eval examples, 13.8 s training (174 examples/s); results in {path}")
    printed = capsys.readouterr().err
    assert printed.count("\n") == 1 and path in printed
