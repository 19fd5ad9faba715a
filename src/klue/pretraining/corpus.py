"""Corpus files for tokenizer and masked-LM training, and sentence helpers.

`read_corpus`: a `.jsonl` file holds one JSON object per line with the text under "text"; any other file
holds one text per line. Blank lines are skipped. (The corpus of the pretraining experiment, built from the
Korean sets on hand, is made by benchmarks/pretrain_experiment.py.)

Every corpus file is read through `read_corpus_text`, the PII pseudonymiser's included: missing files,
directories, bytes that are not UTF-8 (with the encoding they most likely are) and NUL bytes are a
`DataError` naming the file and line, a leading byte-order mark is dropped, so neither a BOM nor a NUL can
become a vocabulary entry.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from klue.errors import DataError, ProblemLog
from klue.io.text import decode_utf8, jsonl_objects, read_bytes

_SENTENCE_END = re.compile(r"(?<=[.?!。])\s+")


def _check_no_nul(text: str, log: ProblemLog) -> None:
    """One error at the first line with a NUL character (with the count): no text corpus holds one, and
    one that reached the tokenizer trainer would become a vocabulary entry."""
    first = text.find("\0")
    if first < 0:
        return
    lines = text.split("\n")
    with_nul = sum(1 for line in lines if "\0" in line)
    also = f"; {with_nul - 1} more lines have them" if with_nul > 1 else ""
    log.error(f"line {text.count(chr(10), 0, first) + 1}",
              f"a NUL byte: a text corpus holds none (is this a binary file?){also}")


def read_corpus_text(path: Path) -> str:
    """The UTF-8 text of one corpus file, a leading BOM dropped; DataError naming the file (and line) when
    it is missing, a directory, not UTF-8 (with the likely encoding) or holds NUL bytes."""
    log = ProblemLog(str(path))
    data = read_bytes(path, log)
    text = decode_utf8(data, log) if data is not None else None
    if text is not None:
        _check_no_nul(text, log)
    log.raise_if_errors()
    assert text is not None  # raise_if_errors raised otherwise
    return text


def _universal_lines(text: str) -> list[str]:
    """Lines as a text-mode `open()` gives them: `\\n`, `\\r\\n` and `\\r` end a line."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def read_corpus(paths: Sequence[Path | str], text_field: str = "text") -> list[str]:
    texts: list[str] = []
    for raw in paths:
        path = Path(raw)
        lines = _universal_lines(read_corpus_text(path))
        log = ProblemLog(str(path))
        if path.suffix == ".jsonl":
            texts += [obj[text_field].strip() for _, obj in jsonl_objects(lines, log, text_field)]
        else:
            texts += [line.strip() for line in lines if line.strip()]
        log.raise_if_errors()
    if not texts:
        raise DataError(f"no text in the corpus files: {', '.join(str(p) for p in paths)}")
    return texts


def normalise_sentence(text: str) -> str:
    return " ".join(text.split())


def split_sentences(text: str) -> list[str]:
    return [s for s in (normalise_sentence(p) for p in _SENTENCE_END.split(text)) if s]
