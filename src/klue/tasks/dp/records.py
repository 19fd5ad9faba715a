"""KLUE-DP records and readers: the official TSV, CoNLL-U (UD Korean treebanks) and the Hugging Face copy.

File format (docs/tasks.md, DP): TSV; each sentence starts with `## <guid>\\t<sentence>`, then one row per
word: INDEX, WORD_FORM, LEMMA (morphemes, space-separated), POS (`+`-joined tags), HEAD (0 = root),
DEPREL; a blank line ends it. `#` lines that do not split into exactly 2 tab fields are comments (the
file header is five of them). UD Korean CoNLL-U files read into the same records (`read_conllu`),
with UD labels: `DpRecord.label_set` says which label set a record uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from klue.errors import DataError, ProblemLog
from klue.io import hf
from klue.io.conllu import ConlluWord, read_sentences
from klue.io.fields import Fields
from klue.io.formats import ReadPurpose
from klue.io.text import check_unique_guids, read_text
from klue.metrics.dp import DEPRELS
from klue.tasks.kinds import gold_prediction_of, reads_for_prediction

_DEPREL_SET = frozenset(DEPRELS)
N_COLUMNS = 6
N_INPUT_COLUMNS = 4  # INDEX WORD_FORM LEMMA POS: a row to predict, without its gold HEAD and DEPREL
UNSPECIFIED = "_"  # CoNLL-U's empty field

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
    # False: read for prediction from rows without HEAD and DEPREL (then `heads` and `deprels` are ());
    # such a record is never scored
    labelled: bool = True

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


def read(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[DpRecord]:
    """Read an official KLUE-DP TSV file; every problem goes to `log` with its line. Read for prediction
    (`klue.tasks.kinds.reads_for_prediction`), a sentence's rows may leave out HEAD and DEPREL."""
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
        if len(fields) not in _widths(purpose):
            log.error(f"line {number}", f"expected {_columns_wanted(purpose)}, found {len(fields)}")
            current.ok = False
            continue
        current.rows.append((number, fields))
    finish(current)
    check_unique_guids(guid_lines, log)
    if not records and not log.errors:
        log.error(location="line 1", message="no sentences in the file")
    return records


def _widths(purpose: ReadPurpose) -> tuple[int, ...]:
    """The column counts a word row may have: 6, or (read for prediction) 4 as well."""
    return (N_COLUMNS, N_INPUT_COLUMNS) if reads_for_prediction(purpose) else (N_COLUMNS,)


def _columns_wanted(purpose: ReadPurpose) -> str:
    if reads_for_prediction(purpose):
        return (f"{N_COLUMNS} tab-separated columns (INDEX WORD_FORM LEMMA POS HEAD DEPREL), or {N_INPUT_COLUMNS} "
                "without the gold HEAD and DEPREL")
    return f"{N_COLUMNS} tab-separated columns (INDEX WORD_FORM LEMMA POS HEAD DEPREL)"


def _head(head: str, n: int, where: str, log: ProblemLog) -> int | None:
    """A HEAD field: an integer in 0..n (0 = root), or None (logged)."""
    try:
        value = int(head)
    except ValueError:
        log.error(where, f"HEAD {head!r} is not an integer")
        return None
    if not 0 <= value <= n:
        log.error(where, f"HEAD {value} is out of range 0..{n} for a sentence of {n} words")
        return None
    return value


def _labelled(pending: _Pending, log: ProblemLog) -> bool | None:
    """Whether every row of the sentence gives HEAD and DEPREL (True), none does (False: read for
    prediction), or some do (None, logged: a sentence gives its gold for every word or for none)."""
    widths = {len(fields) for _, fields in pending.rows}
    if len(widths) == 1:
        return widths == {N_COLUMNS}
    log.error(f"line {pending.line}", f"sentence {pending.guid!r} mixes rows with and without HEAD and DEPREL; "
              "a sentence to predict leaves them out of every row, a gold one gives them in each")
    return None


def _build(pending: _Pending, log: ProblemLog) -> DpRecord | None:
    n = len(pending.rows)
    labelled = _labelled(pending, log)
    ok = pending.ok and labelled is not None
    heads: list[int] = []
    for position, (number, fields) in enumerate(pending.rows, start=1):
        where = f"line {number}"
        index, _form, lemma, pos = fields[:N_INPUT_COLUMNS]
        if index.strip() != str(position):
            log.error(where, f"INDEX {index!r}: words must be numbered 1, 2, ... (expected {position})")
            ok = False
        if len(fields) == N_COLUMNS:
            head, deprel = fields[N_INPUT_COLUMNS:]
            value = _head(head, n, where, log)
            ok = ok and value is not None
            heads.append(value if value is not None else -1)
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
    deprels = tuple(columns[5]) if labelled else ()
    return DpRecord(pending.guid, pending.sentence, tuple(columns[1]), tuple(columns[2]), tuple(columns[3]),
                    tuple(heads), deprels, "klue", bool(labelled))


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
    # Heads are checked against the gold sentence when scored (`head_range_problem`), with the other
    # problems that need the gold (word count, labels), so one pass names them all.
    return DpPrediction(guid, tuple(heads), tuple(deprels))


def head_range_problem(heads: Sequence[int], n_words: int) -> str | None:
    """What is impossible about `heads` in a sentence of `n_words` words, or None: as in a gold file, each
    head is 0 (root) or the 1-based index of a word of the sentence."""
    outside = [(i, h) for i, h in enumerate(heads, start=1) if not 0 <= h <= n_words]
    if not outside:
        return None
    word, head = outside[0]
    more = f" ({len(outside)} words in all)" if len(outside) > 1 else ""
    return f"word {word}: head {head} is outside 0..{n_words} (0 = root, else a word of the sentence){more}"


gold_prediction = gold_prediction_of(DpPrediction, "heads", "deprels")


def ud_lemma_pieces(lemma: str) -> list[str]:
    """The morphemes of a UD Korean LEMMA: `가깝+ㄴ` -> [`가깝`, `ㄴ`]; a lemma that is (or holds) a literal
    `+` (an empty piece) is one piece."""
    pieces = lemma.split("+")
    return [lemma] if any(not p for p in pieces) else pieces


def ud_lemma_to_klue(lemma: str) -> str:
    """`가깝+ㄴ` -> `가깝 ㄴ`; a lemma that is (or holds) a literal `+` stays whole."""
    return " ".join(ud_lemma_pieces(lemma))


def _warn_piece_counts(words: Sequence[ConlluWord], log: ProblemLog) -> None:
    """As the KLUE DP reader does: a warning where LEMMA and XPOS disagree on the number of morphemes
    (UD Korean has a few, e.g. LEMMA `이` for XPOS `VCP+ETM`); the words are kept as the file has them."""
    for word in words:
        if UNSPECIFIED in (word.lemma, word.xpos):
            continue  # nothing to compare with
        n_lemma, n_xpos = len(ud_lemma_pieces(word.lemma)), len(word.xpos.split("+"))
        if n_lemma != n_xpos:
            log.warning(f"line {word.line}", f"word {word.id}: LEMMA {word.lemma!r} has {n_lemma} morphemes but "
                        f"XPOS {word.xpos!r} has {n_xpos} tags")


def read_conllu(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[DpRecord]:
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
        _warn_piece_counts(words, log)
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


# ------------------------------------------------------------------------------------ Hugging Face


@dataclass(frozen=True)
class _HfColumns:
    """One hub dp row's word columns, each checked to hold the right kind of items."""

    numbers: list[Any]
    words: tuple[str, ...]
    lemmas: tuple[str, ...]
    pos: tuple[str, ...]
    heads: list[Any]
    deprels: tuple[str, ...]


def _hf_columns(fields: Fields, names: list[str] | None) -> _HfColumns | None:
    numbers, heads = fields.list("index"), fields.list("head")
    words, lemmas, pos = fields.str_list("word_form"), fields.str_list("lemma"), fields.str_list("pos")
    raw = fields.list("deprel")
    deprels = [hf.by_name(d, names, DEPRELS, f"{fields.at('deprel')}[{i}]", fields.log)
               for i, d in enumerate(raw or [])]
    if numbers is None or heads is None or words is None or lemmas is None or pos is None or raw is None:
        return None
    labels = tuple(d for d in deprels if d is not None)
    if len(labels) != len(raw):
        fields.ok = False  # by_name logged each unknown label
        return None
    return _HfColumns(numbers, words, lemmas, pos, heads, labels)


def _hf_problem(columns: _HfColumns) -> tuple[str, str] | None:
    """(column, what is wrong) with a row's words, or None: one item per word in every column, words
    numbered 1..n, heads integers within 0..n."""
    lengths = [len(c) for c in (columns.numbers, columns.words, columns.lemmas, columns.pos, columns.heads,
                                columns.deprels)]
    n = lengths[1]
    if n == 0 or set(lengths) != {n}:
        return "word_form", ("index, word_form, lemma, pos, head and deprel must hold one item per word, found "
                             f"{', '.join(map(str, lengths))}")
    if columns.numbers != list(range(1, n + 1)):
        return "index", "words must be numbered 1, 2, ..."
    if any(isinstance(h, bool) or not isinstance(h, int) for h in columns.heads):
        return "head", "every head must be an integer (0 = root)"
    problem = head_range_problem(columns.heads, n)
    return ("head", problem) if problem is not None else None


HF_GUID_PREFIX = "klue-dp-v1"  # rows of the hub copy carry no guid: they are named `klue-dp-v1_<split>_<row>`


def from_hf(dataset: Any, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[DpRecord]:
    """HF `klue/klue` dp rows (`sentence, index, word_form, lemma, pos, head, deprel`, one list item per
    word) -> DP records with KLUE labels; an export's `guid` is kept, else the row is named by
    `klue.io.hf.records_from_named_rows`. Checked as the official reader checks a sentence."""
    names = hf.label_names(dataset, "deprel")

    def record(guid: str | None, fields: Fields) -> DpRecord | None:
        sentence = fields.str("sentence")
        columns = _hf_columns(fields, names)
        problem = _hf_problem(columns) if columns is not None else None
        if problem is not None:
            fields.fail(fields.at(problem[0]), problem[1])
        if columns is None or guid is None or sentence is None or not fields.ok:
            return None
        for i, (lemma, tags) in enumerate(zip(columns.lemmas, columns.pos)):
            if len(lemma.split(" ")) != len(tags.split("+")):  # kept as given, as the official reader does
                log.warning(f"{fields.at('lemma')}[{i}]", f"LEMMA has {len(lemma.split(' '))} morphemes but POS "
                            f"has {len(tags.split('+'))} tags")
        return DpRecord(guid, sentence, columns.words, columns.lemmas, columns.pos, tuple(columns.heads),
                        columns.deprels, "klue")

    return hf.records_from_named_rows(dataset, log, HF_GUID_PREFIX, record)


def to_hf(records: Sequence[DpRecord]) -> list[dict[str, Any]]:
    """Rows in the klue/klue dp layout, plus the `guid` the hub copy lacks; only KLUE-labelled records
    (UD ones have other labels than the ClassLabel column holds)."""
    rows = []
    for r in records:
        if r.label_set != "klue":
            raise DataError(f"{r.guid}: only records with KLUE labels can be exported, not {r.label_set!r} ones")
        rows.append({"guid": r.guid, "sentence": r.sentence, "index": list(range(1, len(r) + 1)),
                     "word_form": list(r.words), "lemma": list(r.lemmas), "pos": list(r.pos),
                     "head": list(r.heads), "deprel": list(r.deprels)})
    return rows


# The export's columns: the hub's (deprel a ClassLabel in the official order), plus the guid.
HF_FEATURES: dict[str, Any] = {
    "guid": "string", "sentence": "string", "index": ["int32"], "word_form": ["string"], "lemma": ["string"],
    "pos": ["string"], "head": ["int32"], "deprel": [hf.Labels(DEPRELS)]}
HF_LAYOUT = hf.HfLayout(HF_FEATURES, to_hf, from_hf)
