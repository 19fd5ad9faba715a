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
    """The sentences of a CoNLL-U file; problems go to `log` with their line, one per bad cell: a word line
    that cannot be read still counts as a word of its sentence, so the words after it are numbered and their
    heads checked as the file means them (one bad HEAD is one error, not one per following word)."""
    text = read_text(path, log)
    if text is None:
        return []
    sentences: list[ConlluSentence] = []
    meta: dict[str, str] = {}
    words: list[ConlluWord | None] = []  # None: a word line that could not be read (its problem is logged)
    start = 0
    numbered_to = 0  # the last word ID seen in this sentence, so a gap or a repeat is reported once

    def finish() -> None:
        n = len(words)
        heads_ok = True
        numbering_ok = n == numbered_to  # else heads name words that are not where their IDs say
        for word in words:
            if word is not None and numbering_ok and not 0 <= word.head <= n:
                log.error(f"line {word.line}", f"word {word.id}: HEAD {word.head} is out of range 0..{n}")
                heads_ok = False
        read = [w for w in words if w is not None]
        if words and len(read) == n and heads_ok:
            sentences.append(ConlluSentence(meta.get("sent_id"), meta.get("text"), start, tuple(read)))
        elif meta and not words:
            log.error(f"line {start}", "sentence with comments but no words")

    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        line = raw.removesuffix("\r")
        if not line.strip():
            finish()
            meta, words, start, numbered_to = {}, [], 0, 0
            continue
        if not start:
            start = number
        if line.startswith("#"):
            key, sep, value = line[1:].partition("=")
            if sep:
                meta[key.strip()] = value.strip()
            continue
        fields = line.split("\t")
        word_id = fields[0]
        if "-" in word_id or "." in word_id:
            continue  # a multi-word token range or an empty node: not a word of the basic tree
        words.append(_word(fields, len(words) + 1, numbered_to, f"line {number}", number, log))
        numbered_to = int(word_id) if word_id.isdigit() else numbered_to + 1
    finish()
    return sentences


def _word(fields: list[str], position: int, numbered_to: int, where: str, number: int,
          log: ProblemLog) -> ConlluWord | None:
    """One word line, or None after logging its one problem. An ID is right when it follows the previous
    line's (`numbered_to` + 1: after a missing line) or the line's place (`position`: after one bad ID), so one
    bad line is one error, not one per following word."""
    if len(fields) != N_COLUMNS:
        log.error(where, f"expected {N_COLUMNS} tab-separated CoNLL-U columns, found {len(fields)}")
        return None
    if fields[0] not in (str(numbered_to + 1), str(position)):
        log.error(where, f"ID {fields[0]!r}: words must be numbered 1, 2, ... (expected {position})")
        return None
    try:
        head = int(fields[6])
    except ValueError:
        log.error(where, f"HEAD {fields[6]!r} is not an integer")
        return None
    return ConlluWord(position, fields[1], fields[2], fields[3], fields[4], head, fields[7], number)
