"""CoNLL-U (Universal Dependencies) reading, mapped onto KLUE-DP records.

UD Korean (GSD, Kaist) annotates the same unit KLUE-DP does, the word (eojeol), with its morphemes in
LEMMA joined by `+` and their Sejong tags in XPOS joined by `+`. A sentence maps onto a `DpRecord`:
word forms, lemmas with the `+` turned into spaces (KLUE's LEMMA spelling), XPOS as is, heads, and the
UD DEPREL labels as they are (`label_set="ud"`: they are not KLUE labels). Multi-word token ranges
(`3-4`) and empty nodes (`5.1`) are not words of the basic tree and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from klue.data.formats import check_unique_guids, read_text
from klue.errors import ProblemLog
from klue.tasks.dp import DpRecord

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
        words.append(ConlluWord(expected, fields[1], fields[2], fields[3], fields[4], head, fields[7]))
    finish()
    return sentences


def ud_lemma_to_klue(lemma: str) -> str:
    """`가깝+ㄴ` -> `가깝 ㄴ`; a lemma that is (or holds) a literal `+` stays whole."""
    pieces = lemma.split("+")
    return lemma if any(not p for p in pieces) else " ".join(pieces)


def read_dp_records(path: Path, log: ProblemLog) -> list[DpRecord]:
    """A CoNLL-U file as DP records with UD labels. Sentences without `# sent_id` get `<file stem>-<k>`."""
    sentences = read_sentences(path, log)
    records = []
    guid_lines = []
    for k, sentence in enumerate(sentences, start=1):
        guid = sentence.sent_id or f"{path.stem}-{k}"
        if sentence.sent_id is None:
            log.warning(f"line {sentence.line}", f"no `# sent_id`; named {guid!r}")
        guid_lines.append((guid, f"line {sentence.line}"))
        words = sentence.words
        text = sentence.text if sentence.text is not None else " ".join(w.form for w in words)
        records.append(DpRecord(
            guid=guid,
            sentence=text,
            words=tuple(w.form for w in words),
            lemmas=tuple(ud_lemma_to_klue(w.lemma) for w in words),
            pos=tuple(w.xpos for w in words),
            heads=tuple(w.head for w in words),
            deprels=tuple(w.deprel for w in words),
            label_set="ud",
        ))
    check_unique_guids(guid_lines, log)
    return records
