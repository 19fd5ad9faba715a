"""Readers of other real formats (KorNLI, KorSTS, KorQuAD/SQuAD, ynat-resplit, the Hugging Face copy)."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.errors import DataError, ProblemLog
from klue.tasks import reading
from klue.tasks.mrc import records as mrc
from klue.tasks.nli import records as nli
from klue.tasks.re import records as re
from klue.tasks.sts import records as sts
from klue.tasks.wos import records as wos
from klue.tasks.ynat import records as ynat
from task_files import write_file


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    return write_file(tmp_path / name, content)


def run(reader: Any, path: Path) -> tuple[list[Any], ProblemLog]:
    log = ProblemLog(str(path))
    return reader(path, log), log


# ------------------------------------------------------------------------------------------- KorNLI


def test_kornli(tmp_path: Path) -> None:
    text = ("sentence1\tsentence2\tgold_label\n"
            "그가 말했다.\t그는 말했다.\tentailment\n"
            "그가 말했다.\t그는 침묵했다.\tcontradiction\n"
            "그가 말했다.\t그는 침묵했다.\tcontradiction\n"
            "하나\t둘\tmaybe\n"
            "셋\t넷\n")
    records, log = run(nli.read_kornli, write(tmp_path, "xnli.dev.ko.tsv", text))
    assert [r.guid for r in records] == ["kornli-xnli.dev.ko_00000", "kornli-xnli.dev.ko_00001",
                                         "kornli-xnli.dev.ko_00002"]
    assert records[0] == nli.NliRecord("kornli-xnli.dev.ko_00000", "kornli", "그가 말했다.", "그는 말했다.", "entailment")
    assert sorted((p.location, p.severity) for p in log.problems) == [
        ("line 4", "warning"), ("line 5", "error"), ("line 6", "error")]
    messages = {p.location: p.message for p in log.problems}
    assert "unknown label 'maybe'" in messages["line 5"] and "3 tab-separated" in messages["line 6"]


@pytest.mark.parametrize(("content", "words"), [
    ("a\tb\tc\nx\ty\tneutral\n", "expected the header"), ("", "empty"), (b"sentence1\xff", "not UTF-8"),
    ("sentence1\tsentence2\tgold_label\n", "no rows"),
])
def test_kornli_file_errors(tmp_path: Path, content: Any, words: str) -> None:
    records, log = run(nli.read_kornli, write(tmp_path, "k.tsv", content))
    assert records == [] and len(log.errors) == 1 and words in log.errors[0].message


def test_real_kornli(shared_data_dir: Path) -> None:
    records, log = run(nli.read_kornli, shared_data_dir / "korean/kornli/xnli.dev.ko.tsv")
    assert len(records) == 2490 and not log.errors
    assert {r.gold_label for r in records} == set(nli.LABELS)


# ------------------------------------------------------------------------------------------- KorSTS


def test_korsts(tmp_path: Path) -> None:
    text = ("genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\n"
            "main-captions\tMSRvid\t2012test\t0001\t5.000\t비행기가 이륙한다.\t비행기가 이륙하고 있다.\n"
            "main-news\theadlines\t2016\t0002\t2.5\t가\t나\n"
            "main-news\theadlines\t2016\t0003\t5.5\t가\t나\n"
            "main-news\theadlines\t2016\t0004\tfive\t가\t나\n")
    records, log = run(sts.read_korsts, write(tmp_path, "sts-dev.tsv", text))
    assert records[0] == sts.StsRecord("korsts-sts-dev_00000", "korsts/main-captions/MSRvid/2012test/0001",
                                       "비행기가 이륙한다.", "비행기가 이륙하고 있다.", 5.0, 5.0, 1)
    assert records[1].binary_label == 0 and len(records) == 2
    assert [p.location for p in log.errors] == ["line 4", "line 5"]
    assert "outside the 0-5" in log.errors[0].message and "not a number" in log.errors[1].message


def test_real_korsts(shared_data_dir: Path) -> None:
    train, log = run(sts.read_korsts, shared_data_dir / "korean/korsts/sts-train.tsv")
    dev, dev_log = run(sts.read_korsts, shared_data_dir / "korean/korsts/sts-dev.tsv")
    # KorSTS dev has 1,500 rows (the data README says 1,499; the file, without a final newline, holds 1,500)
    assert (len(train), len(dev)) == (5749, 1500) and not log.problems and not dev_log.problems
    assert len({r.guid for r in train}) == 5749


# -------------------------------------------------------------------------------------- KorQuAD


def squad(answers: list[dict[str, Any]], qid: str = "q1") -> str:
    return json.dumps({"version": "KorQuAD_v1.0_dev", "data": [{"title": "제목", "paragraphs": [
        {"context": "1989년 2월 15일 여의도", "qas": [{"answers": answers, "id": qid, "question": "언제?"}]}]}]},
        ensure_ascii=False)


def test_squad(tmp_path: Path) -> None:
    records, log = run(mrc.read_korquad, write(tmp_path, "korquad.json", squad([{"text": "여의도", "answer_start": 13}])))
    assert not log.problems
    assert records == [mrc.MrcRecord("q1", "언제?", (mrc.MrcAnswer("여의도", 13),), None, False,
                                     "1989년 2월 15일 여의도", title="제목", source="korquad")]
    _, bad = run(mrc.read_korquad, write(tmp_path, "bad.json", squad([{"text": "여의도", "answer_start": 3}])))
    assert [p.location for p in bad.errors] == ["$.data[0].paragraphs[0].qas[0].answers[0]"]
    _, empty = run(mrc.read_korquad, write(tmp_path, "empty.json", squad([])))
    assert "has no answers" in empty.errors[0].message


def test_real_korquad(shared_data_dir: Path) -> None:
    records, log = run(mrc.read_korquad, shared_data_dir / "korean/korquad-v1/KorQuAD_v1.0_dev.json")
    assert len(records) == 5774 and not log.problems
    assert len({r.guid for r in records}) == 5774


# ---------------------------------------------------------------------------------- ynat-resplit


def test_ynat_resplit(tmp_path: Path) -> None:
    items = [{"guid": "ynat-resplit_train_00000", "title": "제목", "label": "세계"},
             {"guid": "ynat-resplit_train_00001", "title": "제목", "label": "World"},
             {"guid": "ynat-resplit_train_00000", "title": "제목"}]
    records, log = run(ynat.read_resplit, write(tmp_path, "r.json", json.dumps(items, ensure_ascii=False)))
    assert records == [ynat.YnatRecord("ynat-resplit_train_00000", "제목", "세계")]
    assert [p.location for p in log.errors] == ["$[1].label", "$[2].label", "$[2].guid"]
    assert ynat.to_json(records[0]) == items[0]


def test_real_ynat_resplit(shared_data_dir: Path) -> None:
    for name, count in [("ynat-resplit_train.json", 36576), ("ynat-resplit_test.json", 9078)]:
        records, log = run(ynat.read_resplit, shared_data_dir / "klue-derived/ynat-resplit" / name)
        assert len(records) == count and not log.problems


# ---------------------------------------------------------------------------------- Hugging Face

datasets = pytest.importorskip("datasets")
Value, ClassLabel, Features, List = datasets.Value, datasets.ClassLabel, datasets.Features, datasets.List
HF_NLI = ["entailment", "neutral", "contradiction"]
HF_YNAT = ["IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치"]


def hf(rows: list[dict[str, Any]], features: dict[str, Any]) -> Any:
    return datasets.Dataset.from_list(rows, features=Features(features))


def convert(name: str, dataset: Any) -> tuple[list[Any], ProblemLog]:
    log = ProblemLog(f"hf:klue/klue:{name}")
    layout = registry.get(name).hf_layout()
    assert layout is not None, f"{name} declares no Hugging Face mapping"
    return layout.from_rows(dataset, log), log


def test_hf_nli_maps_labels_by_name() -> None:
    rows = [{"guid": f"klue-nli-v1_train_{i:05d}", "source": "NSMC", "premise": "전제", "hypothesis": f"가설 {i}",
             "label": i} for i in range(3)] + [{"guid": "x", "source": "NSMC", "premise": "p", "hypothesis": "h",
                                                "label": -1}]
    features = {"guid": Value("string"), "source": Value("string"), "premise": Value("string"),
                "hypothesis": Value("string"), "label": ClassLabel(names=HF_NLI)}
    records, log = convert("nli", hf(rows, features))
    assert [r.gold_label for r in records] == ["entailment", "neutral", "contradiction"]  # HF 1 = neutral
    assert [p.location for p in log.errors] == ["$[3].label"] and "-1" in log.errors[0].message


def test_hf_ynat_maps_labels_by_name() -> None:
    rows = [{"guid": "ynat-v1_train_00000", "title": "유튜브 내달 2일까지", "label": 0, "url": "u", "date": "d"},
            {"guid": "ynat-v1_train_00001", "title": "정치 기사", "label": 6, "url": "u", "date": "d"}]
    features = {"guid": Value("string"), "title": Value("string"), "label": ClassLabel(names=HF_YNAT),
                "url": Value("string"), "date": Value("string")}
    records, log = convert("ynat", hf(rows, features))
    assert not log.problems and [r.label for r in records] == ["IT과학", "정치"]
    assert ynat.LABELS.index(records[0].label) == 5  # official index differs from the HF index
    assert records[0].url == "u" and records[0].annotations is None


def test_hf_sts() -> None:
    rows = [{"guid": "klue-sts-v1_train_00000", "source": "airbnb-rtt", "sentence1": "a", "sentence2": "b",
             "labels": {"label": 3.7, "real-label": 3.714285714285714, "binary-label": 1}},
            {"guid": "klue-sts-v1_train_00001", "source": "airbnb-rtt", "sentence1": "a", "sentence2": "b",
             "labels": {"label": 7.0, "real-label": 7.0, "binary-label": 1}}]
    features = {"guid": Value("string"), "source": Value("string"), "sentence1": Value("string"),
                "sentence2": Value("string"),
                "labels": {"label": Value("float64"), "real-label": Value("float64"),
                           "binary-label": ClassLabel(names=["negative", "positive"])}}
    records, log = convert("sts", hf(rows, features))
    assert len(records) == 1 and records[0].real_label == 3.714285714285714 and records[0].binary_label == 1
    assert [p.location for p in log.errors] == ["$[1].labels.label", "$[1].labels.real-label"]


def test_hf_re() -> None:
    entity = {"word": Value("string"), "start_idx": Value("int32"), "end_idx": Value("int32"), "type": Value("string")}
    sentence = "〈Something〉는 조지 해리슨이 쓰고 비틀즈가 1969년 앨범 《Abbey Road》에 담은 노래다."
    row = {"guid": "klue-re-v1_train_00000", "sentence": sentence,
           "subject_entity": {"word": "비틀즈", "start_idx": 24, "end_idx": 26, "type": "ORG"},
           "object_entity": {"word": "조지 해리슨", "start_idx": 13, "end_idx": 18, "type": "PER"},
           "label": 0, "source": "wikipedia"}
    bad = {**row, "guid": "klue-re-v1_train_00001",
           "object_entity": {"word": "조지 해리슨", "start_idx": 12, "end_idx": 17, "type": "PER"}}
    features = {"guid": Value("string"), "sentence": Value("string"), "subject_entity": entity,
                "object_entity": entity, "label": ClassLabel(names=list(re.RELATIONS)), "source": Value("string")}
    records, log = convert("re", hf([row, bad], features))
    assert [r.label for r in records] == ["no_relation"] and records[0].object_entity.word == "조지 해리슨"
    assert [p.location for p in log.errors] == ["$[1].object_entity"]


def test_hf_mrc_moves_plausible_answers_back() -> None:
    context = "올여름 장마가 17일 제주도에서 시작됐다."
    base = {"title": "t", "context": context, "news_category": "종합", "source": "hankyung"}
    rows = [{**base, "guid": "klue-mrc-v1_train_00000", "is_impossible": False, "question_type": 1,
             "question": "언제?", "answers": {"answer_start": [8, 8], "text": ["17일", "17"]}},
            {**base, "guid": "klue-mrc-v1_train_00001", "is_impossible": True, "question_type": 3,
             "question": "어디?", "answers": {"answer_start": [12], "text": ["제주도"]}},
            {**base, "guid": "klue-mrc-v1_train_00002", "is_impossible": False, "question_type": 2,
             "question": "무엇?", "answers": {"answer_start": [0], "text": ["장마"]}}]
    features = {"title": Value("string"), "context": Value("string"), "news_category": Value("string"),
                "source": Value("string"), "guid": Value("string"), "is_impossible": Value("bool"),
                "question_type": Value("int32"), "question": Value("string"),
                "answers": datasets.Sequence({"answer_start": Value("int32"), "text": Value("string")})}
    records, log = convert("mrc", hf(rows, features))
    assert [r.answer_texts for r in records] == [["17일", "17"], []]
    assert records[1].plausible_answers == (mrc.MrcAnswer("제주도", 12),) and records[1].is_impossible
    assert [p.location for p in log.errors] == ["$[2].answers.answer_start[0]"]


def test_hf_wos() -> None:
    turn = {"role": Value("string"), "text": Value("string"), "state": List(Value("string"))}
    features = {"guid": Value("string"), "domains": List(Value("string")), "dialogue": List(turn)}
    rows = [{"guid": "wos-v1_train_00000", "domains": ["관광"], "dialogue": [
        {"role": "user", "text": "박물관 찾아요", "state": ["관광-종류-박물관"]},
        {"role": "sys", "text": "네", "state": []},
        {"role": "user", "text": "고마워요", "state": ["관광-종류-박물관"]}]},
        {"guid": "wos-v1_train_00001", "domains": ["관광"], "dialogue": [
            {"role": "user", "text": "x", "state": ["관광-없는슬롯-값"]}]}]
    turns, log = convert("wos", hf(rows, features))
    assert [t.guid for t in turns] == ["wos-v1_train_00000-0", "wos-v1_train_00000-1"]
    assert turns[0].dialogue.dialogue[1].state is None  # the HF empty sys state is not a state
    assert [p.location for p in log.errors] == ["$[1].dialogue[0].state[0]"]
    assert wos.to_json(turns[0].dialogue)["dialogue"][1] == {"role": "sys", "text": "네"}


def test_every_task_maps_hf_rows_with_its_layout_reader() -> None:
    """Every task declares its `HF_LAYOUT` in its own package, and its rows reader is the one every way to
    a copy uses (`hf_copy` holds no task's layout)."""
    for task in registry.all_tasks():
        layout = task.hf_layout()
        assert layout is not None, task.name
        assert layout is importlib.import_module(f"{task.package}.records").HF_LAYOUT, task.name
        assert reading.reader_of(task) is layout.from_rows


def test_hf_unknown_task() -> None:
    """A task that declares no mapping is refused by name before any row is read."""
    plain = dataclasses.replace(registry.get("ner"), hf=None, package="klue.tasks.nowhere", name="plain")
    assert reading.layout_of(plain) is None
    with pytest.raises(DataError, match="task 'plain' has no Hugging Face mapping"):
        reading.reader_of(plain)
