"""Headed TSV files (KorNLI, KorSTS): rows with their line numbers, bad rows logged with their line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from klue.errors import ProblemLog
from klue.io.text import read_text


def headed_rows(path: Path, log: ProblemLog, header: Sequence[str]) -> list[tuple[int, list[str]]]:
    """(line number, fields) of each data row of a headed TSV file; bad rows are logged and skipped."""
    text = read_text(path, log)
    if text is None:
        return []
    lines = text.split("\n")
    first = lines[0].removesuffix("\r").split("\t")
    if tuple(first) != tuple(header):
        log.error(location="line 1", message=f"expected the header {' '.join(header)!r} (tab-separated), found {lines[0][:80]!r}")
        return []
    rows = []
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.removesuffix("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            log.error(f"line {number}", f"expected {len(header)} tab-separated fields, found {len(fields)}")
            continue
        rows.append((number, fields))
    if not rows and not log.errors:
        log.error(location="line 2", message="the file has a header but no rows")
    return rows


def file_stem(path: Path) -> str:
    return path.name.removesuffix(".tsv")
