"""CoNLL-U (Universal Dependencies) files: sentences of words with heads and labels, problems with their line.

Multi-word token ranges (`3-4`) and empty nodes (`5.1`) are not words of the basic tree and are skipped.
The DP task maps these sentences onto its records (`klue.tasks.dp`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from klue.errors import ProblemLog
from klue.io.text import read_text

N_COLUMNS = 10  # ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC


@dataclass(frozen=True)
class ConlluWord:
    id: int
    form: str
    lemma: str
    upos: str
    xpos: str
    head: int
    deprel: str
    line: int = 0  # the word's line in the file, for messages


@dataclass(frozen=True)
class ConlluSentence:
    sent_id: str | None
    text: str | None
    line: int  # where the sentence starts, for messages
    words: tuple[ConlluWord, ...]


def read_sentences(path: Path, log: ProblemLog) -> list[ConlluSentence]:
    """The sentences of a CoNLL-U file; problems go to `log` with their line."""
    text = read_text(path, log)
    if text is None:
        return []
    sentences: list[ConlluSentence] = []
    meta: dict[str, str] = {}
    words: list[ConlluWord] = []
    start = 0
    ok = True

    def finish() -> None:
        n = len(words)
        for word in words:
            if not 0 <= word.head <= n:
                log.error(f"line {start}", f"word {word.id}: HEAD {word.head} is out of range 0..{n}")
                return
        if words and ok:
            sentences.append(ConlluSentence(meta.get("sent_id"), meta.get("text"), start, tuple(words)))
        elif meta and not words and ok:
            log.error(f"line {start}", "sentence with comments but no words")

    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        line = raw.removesuffix("\r")
        if not line.strip():
            finish()
            meta, words, start, ok = {}, [], 0, True
            continue
        if not start:
            start = number
        if line.startswith("#"):
            key, sep, value = line[1:].partition("=")
            if sep:
                meta[key.strip()] = value.strip()
            continue
        fields = line.split("\t")
        where = f"line {number}"
        if len(fields) != N_COLUMNS:
            log.error(where, f"expected {N_COLUMNS} tab-separated CoNLL-U columns, found {len(fields)}")
            ok = False
            continue
        word_id = fields[0]
        if "-" in word_id or "." in word_id:
            continue  # a multi-word token range or an empty node: not a word of the basic tree
        expected = len(words) + 1
        if word_id != str(expected):
            log.error(where, f"ID {word_id!r}: words must be numbered 1, 2, ... (expected {expected})")
            ok = False
            continue
        try:
            head = int(fields[6])
        except ValueError:
            log.error(where, f"HEAD {fields[6]!r} is not an integer")
            ok = False
            continue
        words.append(ConlluWord(expected, fields[1], fields[2], fields[3], fields[4], head, fields[7], number))
    finish()
    return sentences
