"""KLUE-DP: dependency parsing over words (eojeol), with KLUE's 38 dependency labels.

File format (SPEC section 1): TSV; each sentence starts with `## <guid>\\t<sentence>`, then one row per
word: INDEX, WORD_FORM, LEMMA (morphemes, space-separated), POS (`+`-joined tags), HEAD (0 = root),
DEPREL; a blank line ends it. `#` lines that do not split into exactly 2 tab fields are comments (the
file header is five of them). UD Korean CoNLL-U files read into the same records (`klue.data.conllu`),
with UD labels: `DpRecord.label_set` says which label set a record uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from klue.data.formats import check_unique_guids, read_text
from klue.data.protocols import FileProtocol, FileRef
from klue.errors import DataError, Problem, ProblemLog
from klue.metrics.report import MetricMode, MetricReport
from klue.registry import register
from klue.tasks.base import ArchiveFile, OfficialFile, Task

# Official order (SPEC section 1). Labels 0-14 are the frequent ones; the official LAS collapses 15-37.
DEPRELS: tuple[str, ...] = (
    "NP", "NP_AJT", "VP", "NP_SBJ", "VP_MOD", "NP_OBJ", "AP", "NP_CNJ", "NP_MOD", "VNP", "DP", "VP_AJT",
    "VNP_MOD", "NP_CMP", "VP_SBJ",
    "VP_CMP", "VP_OBJ", "VNP_CMP", "AP_MOD", "X_AJT", "VP_CNJ", "VNP_AJT", "IP", "X", "X_SBJ", "VNP_OBJ",
    "VNP_SBJ", "X_OBJ", "AP_AJT", "L", "X_MOD", "X_CNJ", "VNP_CNJ", "X_CMP", "AP_CMP", "AP_SBJ", "R", "NP_SVJ",
)
FREQUENT_DEPRELS = 15  # labels with index >= this collapse into one class in the official LAS
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


def _read_conllu(path: Path, log: ProblemLog) -> list[DpRecord]:
    from klue.data.conllu import read_dp_records  # here, not at the top: conllu imports this module

    return read_dp_records(path, log)


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


def prediction_to_json(prediction: DpPrediction) -> dict[str, Any]:
    return {"guid": prediction.guid, "heads": list(prediction.heads), "deprels": list(prediction.deprels)}


def gold_prediction(record: DpRecord) -> DpPrediction:
    return DpPrediction(record.guid, record.heads, record.deprels)


def evaluate(golds: Sequence[DpRecord], preds: Sequence[DpPrediction], mode: MetricMode) -> MetricReport:
    from klue.metrics import dp as dp_metric

    if len(golds) != len(preds):
        raise DataError(f"dp: {len(golds)} gold sentences but {len(preds)} predictions")
    problems = []
    for i, (gold, pred) in enumerate(zip(golds, preds)):
        if gold.guid != pred.guid:
            problems.append(Problem("predictions", pred.guid, f"expected guid {gold.guid!r} at position {i}"))
        elif len(pred.heads) != len(gold.words):
            problems.append(Problem("predictions", pred.guid,
                                    f"{len(pred.heads)} predicted heads for a sentence of {len(gold.words)} words"))
        elif gold.label_set == "klue" and not set(pred.deprels) <= _DEPREL_SET:
            unknown = sorted(set(pred.deprels) - _DEPREL_SET)
            problems.append(Problem("predictions", pred.guid, f"unknown DEPREL {unknown}"))
    if problems:
        raise DataError(problems)
    label_sets = {g.label_set for g in golds}
    if len(label_sets) > 1:
        raise DataError("dp: the gold records mix KLUE and UD dependency labels; score them apart")
    gold_heads, pred_heads = [list(g.heads) for g in golds], [list(p.heads) for p in preds]
    if label_sets != {"ud"}:
        return dp_metric.compute(gold_heads, [list(g.deprels) for g in golds], pred_heads,
                                 [list(p.deprels) for p in preds], mode=mode)
    return dp_metric.compute_ud(gold_heads, [list(g.deprels) for g in golds], pred_heads,
                                [list(p.deprels) for p in preds], mode=mode)


UD_GSD = FileProtocol(
    name="local:ud-gsd",
    train=FileRef("extra", "korean/ud-korean/ko_gsd-ud-dev.conllu"),
    eval=FileRef("extra", "korean/ud-korean/ko_gsd-ud-test.conllu"),
    reader=_read_conllu,
    description="local protocol, not official and not KLUE data: trained on the UD Korean GSD dev treebank "
                "(CoNLL-U) and evaluated on the UD Korean GSD test treebank, with UD dependency labels",
)


TASK: Task[DpRecord, DpPrediction] = register(Task(
    name="dp",
    aliases=("klue-dp", "dp-v1.1", "klue-dp-v1.1"),
    title="Dependency Parsing",
    order=6,
    version="1",
    files=(
        OfficialFile("train", "klue-dp-v1.1/klue-dp-v1.1_train.tsv", "279c0b4de1e1341036b0147701d7e11ee79860e7"),
        OfficialFile("dev", "klue-dp-v1.1/klue-dp-v1.1_dev.tsv", "ecd421f75cb1343c30e7482ce7cdc730f5d4cd12",
                     1225266),
    ),
    sizes={"train": 10000, "dev": 2000},
    labels=DEPRELS,
    metrics=("uas_macro_f1", "las_macro_f1", "uas_micro_f1", "las_micro_f1"),
    main_metrics=("uas_macro_f1", "las_macro_f1"),
    record_type=DpRecord,
    prediction_type=DpPrediction,
    read=read,
    guid=lambda r: r.guid,
    group_key=lambda r: r.guid,
    gold_prediction=gold_prediction,
    parse_prediction=parse_prediction,
    prediction_to_json=prediction_to_json,
    evaluate=evaluate,
    v1_archive=ArchiveFile(
        "https://aistages-prod-server-public.s3.amazonaws.com/app/Competitions/000071/data/klue-dp-v1.tar.gz",
        "2c76a3543a50599ac6640ad360ba00eac36e0b5b2363f708a614d6e50844d17b", 2033461),
    other_readers={"conllu": _read_conllu},
    protocols={UD_GSD.name: UD_GSD},
    default_local_protocol="local:dev-80-20",
))
