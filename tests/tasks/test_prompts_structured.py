"""The LLM prompts of the structured tasks (NER, DP, MRC, WoS): the interface, the answer formats and their
parsers, and the guards on real data: a perfect answer (`gold_answer`) parsed back scores the maximum on
every metric, through `Task.evaluate` and through a written prediction file scored by the judge; garbage
is a failed parse that scores as wrong; the prompt forms build with shots; no input block holds its gold."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.errors import DataError, ProblemLog
from klue.io.locate import DataRoots, roots_from
from klue.predictions import write_predictions
from klue.scoring import score_files
from klue.tasks.dp.records import DpPrediction, DpRecord
from klue.tasks.mrc.records import MrcAnswer, MrcPrediction, MrcRecord
from klue.tasks.ner.records import NerPrediction, NerRecord, bio_violations
from klue.tasks.prompting import CHAT, GENERATE, TaskPrompts, chat_messages, completion_prompt
from klue.tasks.wos.records import WosDialogue, WosPrediction, WosTurn, WosUtterance, expand_turns

STRUCTURED = ("ner", "dp", "mrc", "wos")
GARBAGE = ("모르겠습니다.", "}{ ][ :: \t", "\x00\x01 ``` ``` 답: ?", "가" * 3000, "[1, 2, 3", "{\"a\": ")
MODES = ("official", "corrected")


@pytest.fixture(scope="module")
def roots(klue_data_dir: Path, shared_data_dir: Path) -> DataRoots:
    return roots_from(klue_data_dir, shared_data_dir)


def prompts_of(name: str, roots: DataRoots | None) -> TaskPrompts:
    return registry.get(name).make_prompts(roots)


@pytest.fixture(scope="module")
def wos_prompts(klue_data_dir: Path) -> TaskPrompts:
    if not (klue_data_dir / "wos-v1.1" / "ontology.json").is_file():
        pytest.skip(f"the WoS ontology is not under {klue_data_dir} (wos-v1.1/ontology.json)")
    return prompts_of("wos", DataRoots(klue_data_dir))


# --- the real files of the guards -------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    task: str
    root: str  # "klue" or "extra"
    path: str
    gold_format: str | None = None


SOURCES = {
    "ner-dev": Source("ner", "klue", "klue-ner-v1.1/klue-ner-v1.1_dev.tsv"),
    "dp-dev": Source("dp", "klue", "klue-dp-v1.1/klue-dp-v1.1_dev.tsv"),
    "mrc-korquad-dev": Source("mrc", "extra", "korean/korquad-v1/KorQuAD_v1.0_dev.json", "korquad"),
    # synthetic, in the official format, with unanswerable questions (KorQuAD 1.0 has none)
    "mrc-synthetic": Source("mrc", "extra", "scoring-cases/mrc/gold.json"),
    "wos-dev-sample": Source("wos", "extra", "klue-partial/wos-v1.1/wos-v1.1_dev_sample_10.json"),
    "wos-synthetic": Source("wos", "extra", "scoring-cases/wos/gold.json"),
}


def source_path(source: Source, roots: DataRoots) -> Path:
    base = roots.klue if source.root == "klue" else roots.extra
    path = None if base is None else base / source.path
    if path is None or not path.is_file():
        pytest.skip(f"{source.path} is not here (see ../shared/data/README.md)")
    return path


def read_source(source: Source, roots: DataRoots) -> tuple[Path, list[Any]]:
    path = source_path(source, roots)
    return path, _read(source, path)


@functools.cache
def _read(source: Source, path: Path) -> list[Any]:
    """The records of a file, read once per session (several tests read the NER and DP dev sets)."""
    log = ProblemLog(str(path))
    records = registry.get(source.task).reader(source.gold_format or "official")(path, log, "score")
    assert records and not log.errors, [str(p) for p in log.errors[:3]]
    return records


# --- the interface ----------------------------------------------------------------------------------------

def test_prompts_follow_the_interface(wos_prompts: TaskPrompts) -> None:
    for name in STRUCTURED:
        prompts = wos_prompts if name == "wos" else prompts_of(name, None)
        assert isinstance(prompts, TaskPrompts) and prompts.version == f"{name}-ko-2", name
        assert prompts.cue == "답:" and prompts.modes == (GENERATE,) and prompts.default_mode == GENERATE
        assert prompts.supports(GENERATE) and not prompts.supports("loglik") and prompts.choices is None
        assert any("가" <= c <= "힣" for c in prompts.instruction), f"{name}: the instruction is not Korean"
        assert prompts.stop == ("\n\n",) and prompts.notes


def test_wos_prompts_need_the_ontology(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="data roots"):
        prompts_of("wos", None)
    with pytest.raises(DataError, match="ontology is missing") as caught:
        prompts_of("wos", DataRoots(tmp_path))
    assert "ontology.json" in str(caught.value)


# --- the guards on real data ------------------------------------------------------------------------------

def ner_inexpressible(record: NerRecord) -> bool:
    """Whether no mention list gives this sentence's gold tags under left-to-right placement: its gold
    starts an entity with I-X, or a gold entity's text (spaces ignored) also occurs, not as that entity,
    between the previous entity's end and it (written independently of the prompts module)."""
    tags = record.nonspace_tags
    if bio_violations(tags):
        return True
    text = "".join(record.nonspace_chars)
    cursor = 0
    for start, tag in enumerate(tags):
        if not tag.startswith("B-"):
            continue
        end = start + 1
        while end < len(tags) and tags[end] == "I-" + tag[2:]:
            end += 1
        if text.find(text[start:end], cursor) != start:
            return True
        cursor = end
    return False


def write_ner_gold(path: Path, original: Path, records: Sequence[NerRecord]) -> None:
    """An official-format NER file holding `records` (the original's file header, then each sentence)."""
    header = original.read_text(encoding="utf-8").split("\n")[:5]
    blocks = ["\n".join([f"## {r.guid}\t{r.marked}", *(f"{c}\t{t}" for c, t in zip(r.chars, r.tags))]) + "\n"
              for r in records]
    path.write_text("\n".join(header) + "\n" + "\n".join(blocks), encoding="utf-8")


def comparable(name: str, record: Any, gold: Any) -> Any:
    """The gold prediction as a parsed answer gives it: NER tags spaces O (their tags are never scored), an
    MRC answer is stripped (equal after the metric's normalisation)."""
    if name == "ner":
        spaces_outside = tuple("O" if c == " " else t for c, t in zip(record.chars, gold.tags))
        return NerPrediction(gold.guid, spaces_outside)
    if name == "mrc":
        return MrcPrediction(gold.guid, gold.answer.strip())
    return gold


def assert_all_maximal(scores: dict[str, float], what: str) -> None:
    assert scores, what
    for name, value in scores.items():
        assert not math.isnan(value) and value == pytest.approx(100.0), (what, name, scores)


@pytest.mark.parametrize("case", sorted(SOURCES))
@pytest.mark.slow
def test_gold_answers_parse_back_to_the_maximum(case: str, roots: DataRoots, tmp_path: Path) -> None:
    source = SOURCES[case]
    task = registry.get(source.task)
    gold_path, records = read_source(source, roots)
    prompts = prompts_of(source.task, roots)
    parsed = [prompts.parse(r, prompts.gold_answer(r)) for r in records]
    assert all(p.ok for p in parsed), [(task.guid(r), p.note) for r, p in zip(records, parsed) if not p.ok][:5]
    if source.task == "ner":
        # The format cannot tell these few sentences (documented in the prompts module); the rest must be
        # perfect, and the whole set nearly so.
        kept = [i for i, r in enumerate(records) if not ner_inexpressible(r)]
        assert len(records) - len(kept) <= 20, len(records) - len(kept)
        whole = task.evaluate(records, [p.prediction for p in parsed], "official").scores
        assert min(whole.values()) > 99.8, whole
        records, parsed = [records[i] for i in kept], [parsed[i] for i in kept]
        gold_path = tmp_path / "ner-gold.tsv"
        write_ner_gold(gold_path, source_path(source, roots), records)
    predictions = [p.prediction for p in parsed]
    assert predictions == [comparable(source.task, r, task.gold_prediction(r)) for r in records]
    written = tmp_path / "predictions.jsonl"
    write_predictions(written, task, records, predictions, "gold answers")
    for mode in MODES:
        assert_all_maximal(task.evaluate(records, predictions, mode).scores, f"{case} {mode} evaluate")
        result = score_files(task, gold_path, written, mode, gold_format=source.gold_format)
        assert result.report.n_examples == len(records)
        assert_all_maximal(result.report.scores, f"{case} {mode} score_files")


def wrong_everywhere(name: str, scores: dict[str, float]) -> None:
    """The metrics a garbage answer must lose entirely (the key ones: some others, such as NER's character
    F1 over O, give credit to predicting nothing)."""
    key = {"ner": ["entity_macro_f1"], "dp": ["uas_macro_f1", "las_macro_f1", "uas", "las"],
           "mrc": ["exact_match"], "wos": ["joint_goal_acc"]}[name]
    assert all(scores[k] == 0.0 for k in key), (name, scores)


@pytest.mark.parametrize("case", ["ner-dev", "dp-dev", "mrc-synthetic", "wos-dev-sample"])
def test_garbage_is_a_failed_parse_scored_as_wrong(case: str, roots: DataRoots) -> None:
    source = SOURCES[case]
    task = registry.get(source.task)
    _, records = read_source(source, roots)
    prompts = prompts_of(source.task, roots)
    # the records a wrong answer can lose: an entity, a word, an answer, a state to get wrong
    scorable = [r for r in records if prompts.gold_answer(r) not in ("[]", "", "{}")][:200]
    for garbage in GARBAGE:
        parsed = [prompts.parse(r, garbage) for r in scorable]
        assert not any(p.ok for p in parsed), (case, garbage)
        assert all(p.note for p in parsed)
        wrong_everywhere(source.task, task.evaluate(scorable, [p.prediction for p in parsed], "official").scores)


@pytest.mark.parametrize("case", ["ner-dev", "dp-dev", "mrc-korquad-dev", "mrc-synthetic", "wos-dev-sample"])
def test_prompt_forms_build_with_two_shots(case: str, roots: DataRoots) -> None:
    source = SOURCES[case]
    _, records = read_source(source, roots)
    prompts = prompts_of(source.task, roots)
    shots, record = records[:2], records[2]
    text = completion_prompt(prompts, record, shots)
    assert text.startswith(prompts.instruction) and text.endswith(f"{prompts.render(record)}\n답:")
    for shot in shots:
        assert f"{prompts.render(shot)}\n답: {prompts.gold_answer(shot)}" in text
    messages = chat_messages(prompts, record, shots)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[2]["content"] == prompts.gold_answer(shots[0]) and CHAT == "chat"
    assert messages[-1]["content"] == prompts.render(record)


@pytest.mark.parametrize("case", sorted(SOURCES))
def test_render_never_holds_the_gold(case: str, roots: DataRoots) -> None:
    source = SOURCES[case]
    _, records = read_source(source, roots)
    prompts = prompts_of(source.task, roots)
    for record in records[:1000]:
        block, answer = prompts.render(record), prompts.gold_answer(record)
        assert f"{prompts.cue} {answer}" not in block and not block.endswith(prompts.cue)
        if source.task != "mrc" and answer not in ("[]", "{}"):  # an MRC answer is a span of its context
            assert answer not in block, (case, answer)


def pessimistic_tokens(text: str) -> float:
    """Tokens an answer may take: 2.5 ASCII characters a token, 3 tokens a non-ASCII character (byte-level
    tokenizers that split every Hangul syllable into its UTF-8 bytes)."""
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return ascii_chars / 2.5 + 3 * (len(text) - ascii_chars)


@pytest.mark.parametrize("case", sorted(SOURCES))
def test_token_budgets_hold_the_gold_answer(case: str, roots: DataRoots) -> None:
    source = SOURCES[case]
    _, records = read_source(source, roots)
    prompts = prompts_of(source.task, roots)
    short = [r for r in records if prompts.max_new_tokens(r) < pessimistic_tokens(prompts.gold_answer(r))]
    assert not short, [(registry.get(source.task).guid(r), prompts.max_new_tokens(r)) for r in short[:3]]


# --- NER --------------------------------------------------------------------------------------------------

def ner_record(text: str, tags: str = "") -> NerRecord:
    """A sentence with tags given as one letter-pair per character (`BP` B-PS, `IL` I-LC, `O ` O)."""
    codes = {"P": "PS", "L": "LC", "O": "OG", "D": "DT", "T": "TI", "Q": "QT"}
    pairs = [tags[i:i + 2] for i in range(0, len(tags), 2)] if tags else ["O "] * len(text)
    names = ["O" if p[0] == "O" else f"{p[0]}-{codes[p[1]]}" for p in pairs]
    assert len(names) == len(text)
    return NerRecord("ner-test", text, tuple(text), tuple(names))


def test_ner_answer_is_a_json_list_of_mentions_in_order() -> None:
    prompts = prompts_of("ner", None)
    record = ner_record("이순신 장군은 서울에", "BPIPIPO O O O O BLILO ")
    assert prompts.gold_answer(record) == '[{"text": "이순신", "type": "PS"}, {"text": "서울", "type": "LC"}]'
    assert prompts.render(record) == "문장: 이순신 장군은 서울에"
    assert prompts.gold_answer(ner_record("없음")) == "[]"
    assert prompts.parse(ner_record("없음"), "[]").ok
    spaced = ner_record("제주 도청", "BLILO ILIL")  # an entity with a space inside: its text keeps the space
    assert prompts.gold_answer(spaced) == '[{"text": "제주 도청", "type": "LC"}]'
    assert prompts.json_schema is not None
    schema = prompts.json_schema(record)
    assert schema["type"] == "array"
    assert schema["items"]["properties"]["type"]["enum"] == ["PS", "LC", "OG", "DT", "TI", "QT"]


def tags_of(prompts: TaskPrompts, record: NerRecord, text: str) -> tuple[tuple[str, ...], str]:
    parsed = prompts.parse(record, text)
    assert isinstance(parsed.prediction, NerPrediction) and len(parsed.prediction.tags) == len(record.chars)
    return parsed.prediction.tags, parsed.note


def test_ner_mentions_are_placed_left_to_right() -> None:
    prompts = prompts_of("ner", None)
    record = ner_record("서울 사람이 서울에")
    # the same text twice: the second mention is searched after the first one's end
    tags, note = tags_of(prompts, record, '[{"text": "서울", "type": "LC"}, {"text": "서울", "type": "LC"}]')
    assert tags == ("B-LC", "I-LC", "O", "O", "O", "O", "O", "B-LC", "I-LC", "O") and not note
    # the search starts after the previous match: the first 서울 is passed over; 부산 is not in the sentence
    tags, note = tags_of(prompts, record, '[{"text": "사람", "type": "PS"}, {"text": "서울", "type": "LC"}, '
                         '{"text": "부산", "type": "LC"}]')
    assert tags == ("O", "O", "O", "B-PS", "I-PS", "O", "O", "B-LC", "I-LC", "O")
    assert note == "1 of 3 mentions not found in the sentence after the previous one"
    # a mention listed out of order is not found after the previous one: skipped and counted
    tags, note = tags_of(prompts, ner_record("서울 사람"), '[{"text": "사람", "type": "PS"}, '
                         '{"text": "서울", "type": "LC"}]')
    assert tags == ("O", "O", "O", "B-PS", "I-PS") and note.startswith("1 of 2 mentions not found")
    # spacing is not scored: a mention written without the sentence's space still lands
    tags, _ = tags_of(prompts, ner_record("제주 도청"), '[{"text": "제주도청", "type": "OG"}]')
    assert [t for t in tags if t != "O"] == ["B-OG", "I-OG", "I-OG", "I-OG"] and tags[2] == "O"


def test_ner_reads_tab_lines_fences_and_korean_type_names() -> None:
    prompts = prompts_of("ner", None)
    record = ner_record("김철수가 3일 서울에")
    expected = ("B-PS", "I-PS", "I-PS", "O", "O", "B-DT", "I-DT", "O", "B-LC", "I-LC", "O")
    assert tags_of(prompts, record, "김철수\tPS\n3일\tdt\n서울\tLC\n")[0] == expected
    fenced = '```json\n[{"text": "김철수", "type": "인물"}, {"text": "3일", "type": "날짜"}, ' \
             '{"text": "서울", "type": "LC"}]\n```'
    assert tags_of(prompts, record, fenced)[0] == expected
    tags, note = tags_of(prompts, record, '답은 [{"text": "김철수", "type": "PS"}, {"text": "x"}, 3] 입니다')
    assert tags[:3] == ("B-PS", "I-PS", "I-PS") and note == "2 items without a text and a known type skipped"


def test_ner_failed_parse_predicts_no_mentions() -> None:
    prompts = prompts_of("ner", None)
    record = ner_record("서울", "BLIL")
    for text in ("", "   ", "서울은 지명입니다", "[{\"text\": \"서울\""):
        parsed = prompts.parse(record, text)
        assert not parsed.ok and parsed.note and parsed.prediction.tags == ("O", "O"), text


# --- DP ---------------------------------------------------------------------------------------------------

def dp_record(heads: Sequence[int] = (3, 3, 0), deprels: Sequence[str] = ("NP_SBJ", "NP_OBJ", "VP")) -> DpRecord:
    words = ("철수가", "밥을", "먹었다.")[:len(heads)]
    return DpRecord("dp-test", " ".join(words), words, ("철수 가", "밥 을", "먹 었 다 ."),
                    ("NNP+JKS", "NNG+JKO", "VV+EP+EF+SF"), tuple(heads), tuple(deprels))


def dp_parse(text: str, record: DpRecord | None = None) -> tuple[DpPrediction, bool, str]:
    parsed = prompts_of("dp", None).parse(record or dp_record(), text)
    return parsed.prediction, parsed.ok, parsed.note


def test_dp_answer_is_numbered_lines() -> None:
    prompts = prompts_of("dp", None)
    record = dp_record()
    assert prompts.gold_answer(record) == "1\t3\tNP_SBJ\n2\t3\tNP_OBJ\n3\t0\tVP"
    assert prompts.render(record) == ("문장: 철수가 밥을 먹었다.\n어절 (번호, 어절, 품사):\n1\t철수가\tNNP+JKS\n"
                                      "2\t밥을\tNNG+JKO\n3\t먹었다.\tVV+EP+EF+SF")
    no_pos = DpRecord("dp-test", "가 나", ("가", "나"), ("_", "_"), ("_", "_"), (2, 0), ("dep", "root"), "ud")
    assert prompts.render(no_pos) == "문장: 가 나\n어절 (번호, 어절):\n1\t가\n2\t나"
    assert prompts.max_new_tokens(record) >= 3 * 8


def test_dp_parsing_tolerates_spacing_and_copied_words() -> None:
    prediction, ok, note = dp_parse("  1 3  np_sbj\n2.\t밥을\t3\tNP_OBJ\n3 | 0 | VP\n\n")
    assert ok and not note and prediction.heads == (3, 3, 0) and prediction.deprels == ("NP_SBJ", "NP_OBJ", "VP")
    prediction, ok, note = dp_parse("1\t3\tNP_SBJ\n1\t2\tNP\n2\t3\tNP_OBJ\n3\t0\tVP")  # the first line counts
    assert ok and prediction.heads == (3, 3, 0) and prediction.deprels[0] == "NP_SBJ"


def test_dp_words_without_a_valid_line_are_wrong_and_in_range() -> None:
    record = dp_record(heads=(2, 3, 0), deprels=("NP", "NP_OBJ", "VP"))
    # word 1: head out of range; word 2: unknown label; word 3: missing
    prediction, ok, note = dp_parse("1\t9\tNP\n2\t3\tNOPE\n", record)
    assert not ok and note == "3 of 3 words without a valid line (scored as wrong); 2 lines unreadable"
    assert all(0 <= h <= 3 for h in prediction.heads) and len(prediction.heads) == 3
    assert all(h != g for h, g in zip(prediction.heads, record.heads))
    assert all(p != g for p, g in zip(prediction.deprels, record.deprels))
    assert prediction.heads == (3, 0, 1) and prediction.deprels == ("VP", "NP", "NP")
    prediction, ok, note = dp_parse("1\t3\tNP_SBJ\n", record)
    assert not ok and prediction.heads[0] == 3 and prediction.heads[1:] == (0, 1) and note.startswith("2 of 3")


# --- MRC --------------------------------------------------------------------------------------------------

def mrc_record(answers: Sequence[str] = ("1592년",), context: str = "임진왜란은 1592년에 일어났다.") -> MrcRecord:
    return MrcRecord("mrc-test", "임진왜란은 언제 일어났나?", tuple(MrcAnswer(a, context.find(a)) for a in answers),
                     3 if not answers else 1, not answers, context)


def test_mrc_answer_is_a_copied_span_or_nothing() -> None:
    prompts = prompts_of("mrc", None)
    record = mrc_record()
    assert prompts.render(record) == "지문: 임진왜란은 1592년에 일어났다.\n질문: 임진왜란은 언제 일어났나?"
    assert prompts.gold_answer(record) == "1592년" and prompts.gold_answer(mrc_record(())) == ""
    parsed = prompts.parse(record, "  1592년 \n설명: 지문에 따르면 ...")
    assert parsed.ok and parsed.prediction == MrcPrediction("mrc-test", "1592년")
    empty = prompts.parse(mrc_record(()), "\n\n")
    assert empty.ok and empty.prediction.answer == ""
    assert prompts.parse(record, "1592 년").ok  # spacing aside it is a span
    assert 8 < prompts.max_new_tokens(record) <= 160


def test_mrc_an_answer_not_in_the_context_is_flagged_and_kept() -> None:
    parsed = prompts_of("mrc", None).parse(mrc_record(), "조선 시대")
    assert not parsed.ok and parsed.prediction.answer == "조선 시대" and "not a span" in parsed.note


# --- WoS --------------------------------------------------------------------------------------------------

def wos_turns() -> list[WosTurn]:
    dialogue = WosDialogue("wos-test", ("식당",), (
        WosUtterance("user", "싼 식당 찾아주세요.", ("식당-가격대-저렴",)),
        WosUtterance("sys", "어느 지역이요?", None),
        WosUtterance("user", "서울 중앙이요.", ("식당-가격대-저렴", "식당-지역-서울 중앙")),
        WosUtterance("sys", "찾았습니다.", None),
        WosUtterance("user", "주차도 되나요?", ("식당-가격대-저렴", "식당-지역-서울 중앙", "식당-주차 가능-yes")),
    ))
    return expand_turns([dialogue])


def test_wos_answer_is_the_whole_state_as_json(wos_prompts: TaskPrompts) -> None:
    turns = wos_turns()
    assert wos_prompts.gold_answer(turns[1]) == '{"식당-가격대": "저렴", "식당-지역": "서울 중앙"}'
    assert wos_prompts.render(turns[1]) == "대화:\n사용자: 싼 식당 찾아주세요.\n시스템: 어느 지역이요?\n사용자: 서울 중앙이요."
    assert "주차" not in wos_prompts.render(turns[1])  # nothing after the record's turn
    assert "- 식당-주차 가능: yes, no" in wos_prompts.instruction and wos_prompts.instruction.count("\n- ") >= 45
    assert wos_prompts.max_new_tokens(turns[2]) > wos_prompts.max_new_tokens(turns[0])
    assert wos_prompts.json_schema is not None
    schema = wos_prompts.json_schema(turns[0])
    assert schema["additionalProperties"] is False and len(schema["properties"]) == 45
    assert "식당-가격대" in schema["properties"]


def wos_state(prompts: TaskPrompts, text: str) -> tuple[tuple[str, ...], bool, str]:
    parsed = prompts.parse(wos_turns()[1], text)
    assert isinstance(parsed.prediction, WosPrediction) and parsed.prediction.guid == "wos-test-1"
    return parsed.prediction.state, parsed.ok, parsed.note


def test_wos_parsing_keeps_only_ontology_slots(wos_prompts: TaskPrompts) -> None:
    state, ok, note = wos_state(wos_prompts, '```json\n{"식당-가격대": " 저렴 ", "식당-맛": "좋음", '
                                '"식당-예약 명수": 2, "식당-주차 가능": true, "식당-지역": "none", "숙소-이름": ""}\n```')
    assert ok and state == ("식당-가격대-저렴", "식당-예약 명수-2", "식당-주차 가능-yes")
    assert note == "3 entries dropped (not an ontology slot, no value, or repeated)"
    state, ok, _ = wos_state(wos_prompts, '["식당-가격대-저렴", "식당-지역-서울 중앙", "엉뚱한 것", "관광-색-빨강"]')
    assert ok and state == ("식당-가격대-저렴", "식당-지역-서울 중앙")
    assert wos_state(wos_prompts, "{}") == ((), True, "")


def test_wos_non_json_is_a_failed_parse_with_an_empty_state(wos_prompts: TaskPrompts) -> None:
    for text in ("", "식당-가격대: 저렴", '{"식당-가격대": "저렴"', "null", '"저렴"'):
        state, ok, note = wos_state(wos_prompts, text)
        assert state == () and not ok and note, text


# --- every task through the registry ---------------------------------------------------------------------

@pytest.mark.parametrize("name", STRUCTURED)
def test_parse_never_raises_on_odd_text(name: str, wos_prompts: TaskPrompts) -> None:
    prompts = wos_prompts if name == "wos" else prompts_of(name, None)
    make: dict[str, Callable[[], Any]] = {"ner": lambda: ner_record("서울에 갔다"), "dp": dp_record,
                                          "mrc": mrc_record, "wos": lambda: wos_turns()[0]}
    record = make[name]()
    for text in (*GARBAGE, "", "\n\n\n", "[[[[", "{{{{", '[{"text": null, "type": []}]', '{"식당-가격대": {"a": 1}}',
                 "1\t-1\tNP\n0\t0\tVP\nx\ty\tz", "\ud800"):
        parsed = prompts.parse(record, text)
        assert parsed.prediction is not None and isinstance(parsed.ok, bool), (name, text)
