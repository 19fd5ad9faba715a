"""Examples to predict (`klue.tasks.reading.read`, the reading purpose "predict"): every
task's official reader accepts a file whose gold fields are left out, the same file is refused when read
to check it (validation, training) or to score it, gold that is there is still checked, and a record
without gold is never scored."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from klue import registry, scoring
from klue.errors import DataError, ProblemLog
from klue.tasks import kinds, reading
from klue.tasks.kinds import is_labelled

# ------------------------------------------------------------------------------------ the files

ANNOTATIONS = {"annotators": ["a1", "a2", "a3"],
               "annotations": {"first-scope": ["경제", "경제", "사회"], "second-scope": ["해당없음"] * 3,
                               "third-scope": ["해당없음"] * 3}}
YNAT = [{"guid": f"ynat-v1_dev_{i:05d}", "title": f"제목 {i}", "predefined_news_category": "경제", "label": label,
         "annotations": ANNOTATIONS, "url": "https://example.org", "date": "2016.06.30. 오전 10:36"}
        for i, label in enumerate(("경제", "정치"))]
NLI = [{"guid": f"klue-nli-v1_dev_{i:05d}", "source": "NSMC", "premise": "힛걸 진심 최고다.",
        "hypothesis": f"가설 {i}", "gold_label": label, "author": label, "label2": label, "label3": label,
        "label4": label, "label5": label} for i, label in enumerate(("entailment", "contradiction", "neutral"))]
STS = [{"guid": f"klue-sts-v1_dev_{i:05d}", "source": "airbnb-rtt", "sentence1": "숙소 위치는 찾기 쉽다.",
        "sentence2": f"숙소 위치는 쉽게 찾을 수 있다 {i}.",
        "labels": {"label": score, "real-label": score, "binary-label": int(score >= 3)},
        "annotations": {"agreement": "0:0:0:0:3:0", "annotators": ["x", "y", "z"], "annotations": [4, 4, 4]}}
       for i, score in enumerate((4.0, 1.5))]
RE_SENTENCE = "〈Something〉는 조지 해리슨이 쓰고 비틀즈가 1969년 앨범 《Abbey Road》에 담은 노래다."
RE = [{"guid": f"klue-re-v1_dev_{i:05d}", "sentence": RE_SENTENCE,
       "subject_entity": {"word": "비틀즈", "start_idx": 24, "end_idx": 26, "type": "ORG"},
       "object_entity": {"word": "조지 해리슨", "start_idx": 13, "end_idx": 18, "type": "PER"},
       "label": label, "source": "wikipedia"} for i, label in enumerate(("no_relation", "org:members"))]
MRC_CONTEXT = "올여름 장마가 17일 제주도에서 시작됐다."
MRC = {"version": "v1.1", "data": [{"title": "장마", "news_category": "종합", "source": "hankyung", "paragraphs": [
    {"context": MRC_CONTEXT, "qas": [
        {"question": "장마는 언제 시작됐나?", "answers": [{"text": "17일", "answer_start": 8}], "question_type": 1,
         "is_impossible": False, "guid": "klue-mrc-v1_dev_00000"},
        {"question": "장마는 어디서 끝났나?", "answers": [], "question_type": 3, "is_impossible": True,
         "plausible_answers": [{"text": "제주도", "answer_start": 12}], "guid": "klue-mrc-v1_dev_00001"}]}]}]}
WOS = [{"guid": "wos-v1_dev_00000", "domains": ["관광"], "dialogue": [
    {"role": "user", "text": "서울 박물관을 찾아요.", "state": ["관광-종류-박물관"]},
    {"role": "sys", "text": "어느 지역이요?"},
    {"role": "user", "text": "종로구요.", "state": ["관광-종류-박물관", "관광-지역-서울 북쪽"]}]}]
NER_HEADER = "## a\n## b\n## c\n## d\n## e\tf\n"
NER = NER_HEADER + ("## klue-ner-v1_dev_00000\t<한국:LC> 사람\n한\tB-LC\n국\tI-LC\n \tO\n사\tO\n람\tO\n\n"
                    "## klue-ner-v1_dev_00001\t<김철수:PS>\n김\tB-PS\n철\tI-PS\n수\tI-PS\n\n")
DP_HEADER = "## a\n## b\n## c\n## d\n## INDEX\tWORD_FORM\tLEMMA\tPOS\tHEAD\tDEPREL\n"
DP = DP_HEADER + ("## klue-dp-v1_dev_00000\t철수가 간다\n1\t철수가\t철수 가\tNNP+JKS\t2\tNP_SBJ\n2\t간다\t가 ㄴ다\tVV+EF\t0\tVP\n\n"
                  "## klue-dp-v1_dev_00001\t좋다\n1\t좋다\t좋 다\tVA+EF\t0\tVP\n\n")


def _drop(objects: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{k: v for k, v in obj.items() if k not in keys} for obj in objects]


def _mrc_without_answers(document: dict[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(document)
    for article in stripped["data"]:
        for paragraph in article["paragraphs"]:
            paragraph["qas"] = _drop(paragraph["qas"], ("answers", "plausible_answers", "is_impossible",
                                                         "question_type"))
    return stripped


def _wos_without_states(dialogues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**d, "dialogue": _drop(d["dialogue"], ("state",))} for d in dialogues]


def _tsv_columns(text: str, keep: int) -> str:
    """The TSV with every character or word line cut to its first `keep` tab fields."""
    lines = [line if not line or line.startswith("#") else "\t".join(line.split("\t")[:keep])
             for line in text.split("\n")]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Case:
    """A task's gold file, the same file without its gold, a file whose gold is there but invalid (with
    the place the error is logged at), and the file name."""

    labelled: Any
    unlabelled: Any
    invalid: Any
    invalid_at: str
    name: str


CASES: dict[str, Case] = {
    "ynat": Case(YNAT, _drop(YNAT, ("label", "annotations")), [{**YNAT[0], "label": "연예"}], "$[0].label",
                 "ynat.json"),
    "nli": Case(NLI, _drop(NLI, ("gold_label", "author", "label2", "label3", "label4", "label5")),
                [{**_drop(NLI, ("author", "label2", "label3", "label4", "label5"))[0], "gold_label": "maybe"}],
                "$[0].gold_label", "nli.json"),
    "sts": Case(STS, _drop(STS, ("labels", "annotations")),
                [{**_drop(STS, ("annotations",))[0], "labels": {"label": 7.0, "real-label": 7.0, "binary-label": 1}}],
                "$[0].labels.label", "sts.json"),
    "re": Case(RE, _drop(RE, ("label",)), [{**RE[0], "label": "per:pet"}], "$[0].label", "re.json"),
    "mrc": Case(MRC, _mrc_without_answers(MRC),
                {"data": [{**MRC["data"][0], "paragraphs": [{"context": MRC_CONTEXT, "qas": [
                    {"question": "언제?", "answers": [{"text": "17일", "answer_start": "8"}], "is_impossible": False,
                     "guid": "g"}]}]}]}, "$.data[0].paragraphs[0].qas[0].answers[0].answer_start", "mrc.json"),
    "wos": Case(WOS, _wos_without_states(WOS),
                [{**WOS[0], "dialogue": [{"role": "user", "text": "x", "state": ["관광-없는슬롯-값"]}]}],
                "$[0].dialogue[0].state[0]", "wos.json"),
    "ner": Case(NER, _tsv_columns(NER, 1), NER_HEADER + "## g\t가\n가\tB-XX\n\n", "line 7", "ner.tsv"),
    "dp": Case(DP, _tsv_columns(DP, 4), DP_HEADER + "## g\t가\n1\t가\t가\tNNG\troot\tNP\n\n", "line 7", "dp.tsv"),
}
TASKS = sorted(CASES)


def write(folder: Path, name: str, content: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False),
                    encoding="utf-8")
    return path


def checked(task_name: str, path: Path) -> list[Any]:
    return reading.read(registry.get(task_name), path, "official", purpose="train").records


def read_for_prediction(task: Any, path: Path, fmt: str | None = None) -> list[Any]:
    return reading.read(task, path, fmt, purpose="predict", option="--input-format").records


def test_every_task_has_a_case() -> None:
    assert TASKS == sorted(t.name for t in registry.all_tasks())


# ------------------------------------------------------------------------------------ reading


@pytest.mark.parametrize("task_name", TASKS)
def test_a_file_without_gold_reads_for_prediction_and_is_refused_otherwise(task_name: str, tmp_path: Path) -> None:
    task, case = registry.get(task_name), CASES[task_name]
    gold = checked(task_name, write(tmp_path / "gold", case.name, case.labelled))
    path = write(tmp_path, case.name, case.unlabelled)
    records = read_for_prediction(task, path)
    assert [task.guid(r) for r in records] == [task.guid(r) for r in gold]
    assert not any(is_labelled(r) for r in records) and all(is_labelled(r) for r in gold)
    assert type(records[0]) is type(gold[0])  # the task's own record type, marked as without gold
    for purpose in ("validate", "train", "score", "export"):
        log = ProblemLog(str(path))
        task.read(path, log, purpose)
        assert log.errors, f"{task_name}: a file without gold must not read for {purpose}"
    with pytest.raises(DataError):
        checked(task_name, path)
    with pytest.raises(DataError):
        reading.read(task, path, purpose="score")


@pytest.mark.parametrize("task_name", TASKS)
def test_a_gold_file_reads_the_same_for_prediction(task_name: str, tmp_path: Path) -> None:
    task, case = registry.get(task_name), CASES[task_name]
    path = write(tmp_path, case.name, case.labelled)
    assert read_for_prediction(task, path) == checked(task_name, path)


@pytest.mark.parametrize("task_name", TASKS)
def test_gold_that_is_there_is_still_checked_for_prediction(task_name: str, tmp_path: Path) -> None:
    case = CASES[task_name]
    path = write(tmp_path, case.name, case.invalid)
    with pytest.raises(DataError) as caught:
        read_for_prediction(registry.get(task_name), path)
    assert case.invalid_at in [p.location for p in caught.value.problems if p.severity == "error"]


@pytest.mark.parametrize("task_name, text, message", [
    ("ner", NER_HEADER + "## g\t가나\n가\tO\n나\n\n", "1 of its 2 character lines have no tag"),
    ("dp", DP_HEADER + "## g\t가 나\n1\t가\t가\tNNG\t2\tNP\n2\t나\t나\tVV\n\n", "mixes rows with and without HEAD"),
])
def test_a_sentence_gives_its_gold_for_every_line_or_none(task_name: str, text: str, message: str,
                                                          tmp_path: Path) -> None:
    with pytest.raises(DataError, match=message):
        read_for_prediction(registry.get(task_name), write(tmp_path, f"x.{task_name}.tsv", text))


def test_other_readers_read_as_always_and_formats_are_told_from_the_file(tmp_path: Path) -> None:
    """Only the official readers relax: a KorNLI TSV without its label column is refused, and an unknown
    format is named with the task's formats."""
    kornli = write(tmp_path / "kornli", "dev.tsv", "sentence1\tsentence2\n전제\t가설\n")
    with pytest.raises(DataError, match="expected the header"):
        read_for_prediction(registry.get("nli"), kornli)
    with pytest.raises(DataError, match="unknown --input-format 'csv' for nli; formats: official, kornli"):
        read_for_prediction(registry.get("nli"), kornli, "csv")
    empty = write(tmp_path, "empty.json", [])
    with pytest.raises(DataError, match="holds no NLI pairs"):
        read_for_prediction(registry.get("nli"), empty)


def test_unlabelled_records_hold_the_documented_placeholders(tmp_path: Path) -> None:
    def read(task_name: str) -> list[Any]:
        case = CASES[task_name]
        return read_for_prediction(registry.get(task_name), write(tmp_path, case.name, case.unlabelled))

    assert {r.label for r in read("ynat")} == {r.gold_label for r in read("nli")} == {kinds.NO_LABEL}
    assert {r.label for r in read("re")} == {kinds.NO_LABEL}
    sts = read("sts")[0]
    assert math.isnan(sts.real_label) and math.isnan(sts.label) and sts.binary_label == -1
    mrc = read("mrc")[0]
    assert mrc.answers == () and mrc.question_type is None and not mrc.is_impossible
    assert [r.tags for r in read("ner")] == [(), ()] and read("ner")[0].chars == tuple("한국 사람")
    dp = read("dp")[0]
    assert (dp.heads, dp.deprels, dp.words) == ((), (), ("철수가", "간다"))
    assert [t.state for t in read("wos")] == [(), ()] and read("wos")[1].history[0].text == "서울 박물관을 찾아요."


@pytest.mark.parametrize("task_name, to_json, gold_key", [
    ("ynat", "to_json", "label"), ("nli", "to_json", "gold_label"), ("sts", "to_json", "labels"),
    ("re", "to_json", "label"),
])
def test_written_back_a_record_without_gold_has_no_gold_field(task_name: str, to_json: str, gold_key: str,
                                                             tmp_path: Path) -> None:
    """Written out, a placeholder would pass for gold: the field is left out, as it was in the file."""
    case = CASES[task_name]
    record = read_for_prediction(registry.get(task_name), write(tmp_path, case.name, case.unlabelled))[0]
    module = __import__(f"klue.tasks.{task_name}.records", fromlist=[to_json])
    assert gold_key not in getattr(module, to_json)(record)


def test_an_mrc_question_without_gold_is_written_without_answers(tmp_path: Path) -> None:
    from klue.tasks.mrc import records as mrc

    case = CASES["mrc"]
    records = read_for_prediction(registry.get("mrc"), write(tmp_path, case.name, case.unlabelled))
    written = mrc.to_json(records, "v1.1")
    assert written == case.unlabelled
    again = read_for_prediction(registry.get("mrc"), write(tmp_path, "again.json", written))
    assert again == records


# ------------------------------------------------------------------------------------ never scored


def _unlabelled_and_predictions(task_name: str, tmp_path: Path) -> tuple[list[Any], list[Any]]:
    """The records of the file without gold, and perfect predictions for the same examples."""
    case = CASES[task_name]
    task = registry.get(task_name)
    gold = checked(task_name, write(tmp_path / "gold", case.name, case.labelled))
    unlabelled = read_for_prediction(task, write(tmp_path, case.name, case.unlabelled))
    return unlabelled, [task.gold_prediction(r) for r in gold]


@pytest.mark.parametrize("task_name", TASKS)
def test_records_without_gold_are_never_scored(task_name: str, tmp_path: Path) -> None:
    task = registry.get(task_name)
    unlabelled, predictions = _unlabelled_and_predictions(task_name, tmp_path)
    with pytest.raises(DataError, match="have no gold .* cannot be scored"):
        task.evaluate(unlabelled, predictions, "official")
    with pytest.raises(DataError, match="this record has no gold"):
        task.gold_prediction(unlabelled[0])
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(task.prediction_to_json(p), ensure_ascii=False) + "\n" for p in predictions),
                    encoding="utf-8")
    with pytest.raises(DataError) as caught:
        scoring.score_predictions(task, unlabelled, path)
    (problem,) = caught.value.problems
    assert problem.message.startswith(f"{task_name}: {len(unlabelled)} of the {len(unlabelled)} gold records "
                                      "have no gold")
    assert repr(task.guid(unlabelled[0])) in problem.message


def test_one_record_without_gold_among_gold_ones_is_refused(tmp_path: Path) -> None:
    task = registry.get("nli")
    gold = checked("nli", write(tmp_path, "nli.json", NLI))
    mixed = [*gold[:2], dataclasses.replace(gold[2], gold_label=kinds.NO_LABEL, labelled=False)]
    with pytest.raises(DataError, match=r"1 of the 3 gold records has no gold .*: 'klue-nli-v1_dev_00002'$"):
        task.evaluate(mixed, [task.gold_prediction(r) for r in gold], "official")
    assert task.evaluate(gold, [task.gold_prediction(r) for r in gold], "official").scores["accuracy"] == 100.0


def test_a_hugging_face_copy_of_records_without_gold_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    from klue.tasks import hf_copy

    unlabelled, _ = _unlabelled_and_predictions("nli", tmp_path)
    with pytest.raises(DataError, match="have no gold .* cannot be written as a Hugging Face copy"):
        hf_copy.dataset_of(registry.get("nli"), unlabelled)


def test_reading_purposes_are_known(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown reading purpose 'guess'"):
        reading.read(registry.get("nli"), tmp_path / "x.json", purpose="guess")  # type: ignore[arg-type]
    assert [p for p in reading.READ_PURPOSES if kinds.reads_for_prediction(p)] == ["predict"]



def test_many_records_without_gold_are_counted_and_the_first_named() -> None:
    records = [dataclasses.make_dataclass("R", [("guid", str), ("labelled", bool)])(f"g{i}", i == 0)
               for i in range(8)]
    with pytest.raises(DataError) as caught:
        kinds.require_labelled(records, "demo", "gold.json")
    (problem,) = caught.value.problems
    assert problem.path == "gold.json" and problem.message.startswith("demo: 7 of the 8 gold records have no gold")
    assert problem.message.endswith("'g1', 'g2', 'g3', 'g4', 'g5' (first 5 of 7)")
    kinds.require_labelled(records[:1])  # gold records only: nothing to refuse
