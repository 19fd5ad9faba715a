"""KLUE-DP records and readers: the official TSV and CoNLL-U (UD Korean treebanks).

File format (docs/tasks.md, DP): TSV; each sentence starts with `## <guid>\\t<sentence>`, then one row per
word: INDEX, WORD_FORM, LEMMA (morphemes, space-separated), POS (`+`-joined tags), HEAD (0 = root),
DEPREL; a blank line ends it. `#` lines that do not split into exactly 2 tab fields are comments (the
file header is five of them). UD Korean CoNLL-U files read into the same records (`read_conllu`),
with UD labels: `DpRecord.label_set` says which label set a record uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from klue.errors import ProblemLog
from klue.io.conllu import read_sentences
from klue.io.text import check_unique_guids, read_text
from klue.metrics.dp import DEPRELS

_DEPREL_SET = frozenset(DEPRELS)
N_COLUMNS = 6

LabelSet = Literal["klue", "ud"]


@dataclass(frozen=True)
class DpRecord:
    """One sentence: per word its form, lemma morphemes, POS tags, head and label (parallel tuples)."""

    guid: str
    sentence: str
    words: tuple[str, ...]  # word forms (eojeol)
    lemmas: tuple[str, ...]  # each word's morphemes, space-separated ("이 행사 는" style)
    pos: tuple[str, ...]  # each word's morpheme tags, '+'-joined ("NNG+JX")
    heads: tuple[int, ...]  # 1-based index of the head word, 0 = root
    deprels: tuple[str, ...]  # KLUE labels (label_set "klue") or UD labels (label_set "ud")
    label_set: LabelSet = "klue"

    def __len__(self) -> int:
        return len(self.words)

    @property
    def morphemes(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(lemma.split(" ")) for lemma in self.lemmas)

    @property
    def pos_tags(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(tags.split("+")) for tags in self.pos)


@dataclass(frozen=True)
class DpPrediction:
    guid: str
    heads: tuple[int, ...]
    deprels: tuple[str, ...]


@dataclass
class _Pending:
    guid: str
    sentence: str
    line: int
    rows: list[tuple[int, list[str]]]  # (line number, the 6 fields)
    ok: bool = True


def read(path: Path, log: ProblemLog) -> list[DpRecord]:
    """Read an official KLUE-DP TSV file; every problem goes to `log` with its line."""
    text = read_text(path, log)
    if text is None:
        return []
    records: list[DpRecord] = []
    guid_lines: list[tuple[str, str]] = []
    current: _Pending | None = None

    def finish(pending: _Pending | None) -> None:
        if pending is None:
            return
        if not pending.rows:
            log.error(f"line {pending.line}", f"sentence {pending.guid!r} has no words")
            return
        record = _build(pending, log)
        if record is not None:
            records.append(record)

    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        line = raw.removesuffix("\r")
        if line.strip() == "":
            finish(current)
            current = None
            continue
        if line.startswith("#"):
            fields = line.strip().split("\t")
            if len(fields) != 2:
                continue  # a comment (the file header lines are comments by this rule)
            finish(current)
            guid = fields[0].lstrip("#").strip()
            if not guid:
                log.error(f"line {number}", "a sentence header must be `## <guid>\\t<sentence>`")
                current = _Pending("", fields[1], number, [], ok=False)
                continue
            guid_lines.append((guid, f"line {number}"))
            current = _Pending(guid, fields[1], number, [])
            continue
        if current is None:
            log.error(f"line {number}", "word row outside a sentence (no `## <guid>` header above it)")
            continue
        fields = line.split("\t")
        if len(fields) != N_COLUMNS:
            log.error(f"line {number}", f"expected {N_COLUMNS} tab-separated columns (INDEX WORD_FORM LEMMA "
                      f"POS HEAD DEPREL), found {len(fields)}")
            current.ok = False
            continue
        current.rows.append((number, fields))
    finish(current)
    check_unique_guids(guid_lines, log)
    if not records and not log.errors:
        log.error(location="line 1", message="no sentences in the file")
    return records


def _build(pending: _Pending, log: ProblemLog) -> DpRecord | None:
    n = len(pending.rows)
    ok = pending.ok
    heads: list[int] = []
    for position, (number, (index, _form, lemma, pos, head, deprel)) in enumerate(pending.rows, start=1):
        where = f"line {number}"
        if index.strip() != str(position):
            log.error(where, f"INDEX {index!r}: words must be numbered 1, 2, ... (expected {position})")
            ok = False
        try:
            value = int(head)
        except ValueError:
            log.error(where, f"HEAD {head!r} is not an integer")
            ok = False
            value = -1
        else:
            if not 0 <= value <= n:
                log.error(where, f"HEAD {value} is out of range 0..{n} for a sentence of {n} words")
                ok = False
        heads.append(value)
        if deprel not in _DEPREL_SET:
            log.error(where, f"unknown DEPREL {deprel!r}; KLUE labels are {' '.join(DEPRELS)}")
            ok = False
        if len(lemma.split(" ")) != len(pos.split("+")):
            # Seen upstream (e.g. a LEMMA "0" for "3%" tagged SN+SW): kept as the file has it.
            log.warning(where, f"LEMMA has {len(lemma.split(' '))} morphemes but POS has "
                        f"{len(pos.split('+'))} tags")
    if not ok:
        return None
    columns = list(zip(*(fields for _, fields in pending.rows)))
    return DpRecord(pending.guid, pending.sentence, tuple(columns[1]), tuple(columns[2]), tuple(columns[3]),
                    tuple(heads), tuple(columns[5]), "klue")


def parse_prediction(obj: Mapping[str, Any], log: ProblemLog, location: str) -> DpPrediction | None:
    guid = obj.get("guid")
    heads = obj.get("heads")
    deprels = obj.get("deprels")
    if not isinstance(guid, str):
        log.error(location, "`guid` must be a string")
        return None
    if not isinstance(heads, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in heads):
        log.error(location, f"{guid}: `heads` must be a list of integers (0 = root)")
        return None
    if not isinstance(deprels, list) or not all(isinstance(d, str) for d in deprels):
        log.error(location, f"{guid}: `deprels` must be a list of label strings")
        return None
    if len(heads) != len(deprels):
        log.error(location, f"{guid}: {len(heads)} heads but {len(deprels)} deprels (one of each per word)")
        return None
    return DpPrediction(guid, tuple(heads), tuple(deprels))


def gold_prediction(record: DpRecord) -> DpPrediction:
    return DpPrediction(record.guid, record.heads, record.deprels)


def ud_lemma_to_klue(lemma: str) -> str:
    """`가깝+ㄴ` -> `가깝 ㄴ`; a lemma that is (or holds) a literal `+` stays whole."""
    pieces = lemma.split("+")
    return lemma if any(not p for p in pieces) else " ".join(pieces)


def read_conllu(path: Path, log: ProblemLog) -> list[DpRecord]:
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
