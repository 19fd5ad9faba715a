"""KLUE-DP prompts for generative LMs: the model writes one numbered line per word (eojeol),
`index<TAB>head<TAB>label`, a CoNLL-U-like table (the output form of arXiv 2506.09983).

The parser never drops a sentence: a word without a valid line (missing, unreadable, head outside
0..n, unknown label) gets a head and a label that differ from its gold ones, chosen deterministically, so
it scores as wrong; heads always stay within 0..n, the range the scorer accepts. The answer has no blank
line, so the `"\\n\\n"` stop never cuts it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from klue.io.locate import DataRoots
from klue.metrics.dp import DEPRELS
from klue.tasks.kinds import refuse_unlabelled
from klue.tasks.prompting import GENERATE, Parsed, TaskPrompts

from .records import UNSPECIFIED, DpPrediction, DpRecord

VERSION = "dp-ko-2"  # -2: answers end at the next example's marker; chat form without the cue
CUE = "답:"
_KLUE_LABELS = frozenset(DEPRELS)
# The stand-in labels of a word without a valid line: the first unless the gold is that one. Both are
# below the official collapse index (15), so the stand-in differs from the gold after the collapse too.
_STAND_IN_LABELS = ("NP", "VP")
_STAND_IN_UD_LABELS = ("dep", "root")  # the same for UD Korean records (label_set "ud")

INSTRUCTION = f"""다음 문장의 의존 구문 구조를 분석하세요. 문장은 어절 단위로 번호가 매겨져 있고, 어절마다 형태소 \
품사가 함께 주어집니다.
어절마다 한 줄씩, 번호 순서대로 "어절 번호<TAB>지배소 어절 번호<TAB>의존 관계"를 쓰세요.
- 지배소는 그 어절이 수식하거나 의존하는 어절입니다. 문장 전체의 중심 어절(보통 마지막 어절)의 지배소는 0입니다.
- 의존 관계는 구문 태그와 기능 태그를 밑줄로 이은 이름입니다. 구문 태그: NP 체언구, VP 용언구, VNP 긍정 지정사구, \
AP 부사구, DP 관형사구, IP 감탄사구, X 의사 구, L 왼쪽 부호, R 오른쪽 부호. 기능 태그: SBJ 주어, OBJ 목적어, \
MOD 관형어(체언 수식), AJT 부사어(용언 수식), CMP 보어, CNJ 접속. 기능 태그가 없으면 구문 태그만 씁니다.
- 쓸 수 있는 의존 관계: {", ".join(DEPRELS)}
예: 어절이 셋인 문장 "철수가 밥을 먹었다"의 답
1\t3\tNP_SBJ
2\t3\tNP_OBJ
3\t0\tVP
"{CUE}" 뒤에 답만 쓰세요."""


def _has_pos(record: DpRecord) -> bool:
    """Whether the record carries POS tags worth showing (CoNLL-U files may leave XPOS `_`)."""
    return any(tags and tags != UNSPECIFIED for tags in record.pos)


def render(record: DpRecord) -> str:
    with_pos = _has_pos(record)
    rows = [f"{i}\t{word}\t{pos}" if with_pos else f"{i}\t{word}"
            for i, (word, pos) in enumerate(zip(record.words, record.pos), start=1)]
    header = "어절 (번호, 어절, 품사):" if with_pos else "어절 (번호, 어절):"
    return "\n".join([f"문장: {record.sentence}", header, *rows])


def format_rows(heads: Sequence[int], deprels: Sequence[str]) -> str:
    return "\n".join(f"{i}\t{head}\t{label}" for i, (head, label) in enumerate(zip(heads, deprels), start=1))


def gold_answer(record: DpRecord) -> str:
    refuse_unlabelled(record)
    return format_rows(record.heads, record.deprels)


def _label(record: DpRecord, written: str) -> str | None:
    """The label a model wrote, if it is one of the record's label set (KLUE names in any case)."""
    if record.label_set == "ud":
        return written or None
    label = written.upper()
    return label if label in _KLUE_LABELS else None


def _int(token: str) -> int | None:
    """An integer token; trailing list punctuation (`1.`, `1:`, `1)`) is tolerated."""
    try:
        return int(token.rstrip(".:)"))
    except ValueError:
        return None


def _row(record: DpRecord, line: str) -> tuple[int, int, str] | None:
    """(index, head, label) from one line, or None. Any whitespace separates the fields; with more than
    three (a model that copies the word too), the first is the index and the last two head and label."""
    tokens = line.replace("|", " ").split()
    if len(tokens) < 3:
        return None
    index, head, label = _int(tokens[0]), _int(tokens[-2]), _label(record, tokens[-1])
    n = len(record.words)
    if index is None or head is None or label is None or not 1 <= index <= n or not 0 <= head <= n:
        return None
    return index, head, label


def stand_in(record: DpRecord, position: int) -> tuple[int, str]:
    """The head and label of word `position` (0-based) when the answer gave none: both differ from the
    gold (head: the next value in 0..n, cyclically), deterministic, within the scorer's range."""
    n = len(record.words)
    labels = _STAND_IN_UD_LABELS if record.label_set == "ud" else _STAND_IN_LABELS
    if not record.labelled:  # read for prediction: no gold to differ from, never scored
        return 0, labels[0]
    gold_head, gold_label = record.heads[position], record.deprels[position]
    return (gold_head + 1) % (n + 1), labels[1] if gold_label == labels[0] else labels[0]


def parse(record: DpRecord, text: str) -> Parsed:
    rows: dict[int, tuple[int, str]] = {}
    unreadable = 0
    for line in text.strip().split("\n"):
        if not line.strip():
            continue
        row = _row(record, line)
        if row is None:
            unreadable += 1
        elif row[0] not in rows:  # a repeated index: the first line for a word counts
            rows[row[0]] = row[1:]
    n = len(record.words)
    filled = [rows.get(i) or stand_in(record, i - 1) for i in range(1, n + 1)]
    prediction = DpPrediction(record.guid, tuple(h for h, _ in filled), tuple(label for _, label in filled))
    missing = n - len(rows)
    notes = []
    if missing:
        notes.append(f"{missing} of {n} words without a valid line (scored as wrong)")
    if unreadable:
        notes.append(f"{unreadable} lines unreadable")
    return Parsed(prediction, missing == 0, "; ".join(notes))


def max_new_tokens(record: DpRecord) -> int:
    # A line such as "12\t11\tNP_SBJ\n" is 6-9 tokens in common tokenizers; 12 a word leaves a margin.
    return 16 + 12 * len(record.words)


def answer_regex(record: DpRecord) -> str:
    """The answers that parse in full (for constrained decoding): one line per word in order, its index, a
    head in 0..n and a label of the record's label set, tab-separated."""
    n = len(record.words)
    heads = "|".join(str(head) for head in range(n + 1))
    labels = r"\S+" if record.label_set == "ud" else "|".join(re.escape(label) for label in DEPRELS)
    return r"\n".join(rf"{i}\t(?:{heads})\t(?:{labels})" for i in range(1, n + 1))


def make_prompts(roots: DataRoots | None = None) -> TaskPrompts:
    """DP prompts; `roots` is unused (the prompts need no resource file)."""
    return TaskPrompts(
        version=VERSION, instruction=INSTRUCTION, cue=CUE, render=render, gold_answer=gold_answer, parse=parse,
        modes=(GENERATE,), default_mode=GENERATE, max_new_tokens=max_new_tokens, stop=("\n\n",),
        regex=answer_regex,
        notes="a word without a valid `index<TAB>head<TAB>label` line is scored as wrong (a head and label "
              "other than the gold); ok is False unless every word has one",
    )
