"""Corpus files for tokenizer and masked-LM training, and sentence helpers.

`read_corpus`: a `.jsonl` file holds one JSON object per line with the text under "text"; any other file
holds one text per line. Blank lines are skipped. (The corpus of the pretraining experiment, built from the
Korean sets on hand, is made by benchmarks/pretrain_experiment.py.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from klue.errors import DataError, ProblemLog
from klue.io.text import jsonl_objects

_SENTENCE_END = re.compile(r"(?<=[.?!。])\s+")


def read_corpus(paths: Sequence[Path | str], text_field: str = "text") -> list[str]:
    texts: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise DataError("corpus file not found", path)
        log = ProblemLog(str(path))
        with path.open(encoding="utf-8") as handle:
            lines = [line.rstrip("\n") for line in handle]
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
