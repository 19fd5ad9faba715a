"""`klue data validate` logic: task detection, reading, counts, every problem, comparison with official."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from klue import registry, validate
from klue.errors import DataError, ProblemLog

NER_HEADER = "## a\n## b\n## c\n## d\n## e\tf\n"
DP_HEADER = "## a\n## b\n## c\n## d\n## INDEX\tWORD_FORM\tLEMMA\tPOS\tHEAD\tDEPREL\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name, task, reader", [
    ("klue-ner-v1.1_dev.tsv", "ner", "official"),
    ("klue-ner-v1.1_train.first5000.tsv", "ner", "official"),
    ("klue-dp-v1.1_dev.tsv", "dp", "official"),
    ("ko_gsd-ud-test.conllu", "dp", "conllu"),
])
def test_detect(name: str, task: str, reader: str) -> None:
    found = validate.detect(Path("/x") / name)
    assert (found.task.name, found.reader) == (task, reader)


def test_detect_official_file_and_explicit_task() -> None:
    found = validate.detect(Path("klue-ner-v1.1_dev.tsv"))
    assert found.official is not None and found.official.role == "dev"
    assert validate.detect(Path("whatever.tsv"), "dp").task.name == "dp"
    with pytest.raises(DataError, match="pass --task"):
        validate.detect(Path("/x/mystery.tsv"))


def test_bad_file_reports_every_problem_with_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "klue-ner-v1.1_dev.tsv",
                 NER_HEADER + "## s1\t가나\n가\tB-XX\n나\n\n## s1\t다\n다다\tO\n\n")
    report = validate.validate_file(path)
    assert report.task == "ner"
    locations = [p.location for p in report.errors]
    assert locations == ["line 7", "line 8", "line 10", "line 11"]  # bad tag, no tab, duplicate, 2 chars
    assert all(p.path == str(path) for p in report.errors)


def test_clean_file_counts_and_differs_from_official(tmp_path: Path) -> None:
    path = write(tmp_path / "klue-dp-v1.1_dev.tsv", DP_HEADER + "## s1\t가\n1\t가\t가\tNNG\t0\tNP\n\n")
    report = validate.validate_file(path)
    assert report.errors == [] and report.n_records == 1
    messages = " ".join(p.message for p in report.warnings)
    assert "content differs" in messages and "2,000" in messages


def test_directory_and_missing_and_unknown(tmp_path: Path) -> None:
    write(tmp_path / "d" / "klue-dp-v1.1_dev.tsv", DP_HEADER + "## s1\t가\n1\t가\t가\tNNG\t0\tNP\n\n")
    write(tmp_path / "d" / "notes.tsv", "nothing")
    reports = validate.validate_paths([tmp_path / "d", tmp_path / "gone" / "klue-ner-v1.1_dev.tsv",
                                       tmp_path / "d" / "notes.tsv"])
    assert [r.path.name for r in reports] == ["klue-dp-v1.1_dev.tsv", "klue-ner-v1.1_dev.tsv", "notes.tsv"]
    assert reports[0].errors == []
    assert "no such file" in reports[1].errors[0].message
    assert reports[2].task is None and "pass --task" in reports[2].errors[0].message
    assert reports[0].to_json()["records"] == 1


@pytest.mark.slow
def test_every_real_file_validates_clean(klue_data_dir: Path, shared_data_dir: Path) -> None:
    # every real data file (scoring-cases/ holds synthetic scorer inputs, some deliberately odd)
    roots = [klue_data_dir, *(shared_data_dir / d for d in ("klue-partial", "klue-derived", "korean"))]
    reports = validate.validate_paths([p for p in roots if p.is_dir()])
    by_name = {r.path.name: r for r in reports}
    assert {"klue-ner-v1.1_dev.tsv", "klue-dp-v1.1_dev.tsv", "ko_gsd-ud-dev.conllu",
            "klue-ner-v1.1_train.first5000.tsv"} <= set(by_name)
    for report in reports:
        assert report.errors == [], report.errors[:5]
    assert by_name["klue-ner-v1.1_dev.tsv"].n_records == 5000
    assert by_name["klue-dp-v1.1_dev.tsv"].n_records == 2000
    # official files match their git blob ids: no "content differs" warning
    for name in ("klue-ner-v1.1_dev.tsv", "klue-dp-v1.1_dev.tsv"):
        assert not any("differs" in p.message for p in by_name[name].warnings)
    # community-reported quirks surface as warnings
    assert any("IOB2" in p.message for p in by_name["klue-ner-v1.1_dev.tsv"].warnings)


def test_unknown_task_option() -> None:
    with pytest.raises(registry.UnknownTaskError):
        validate.validate_paths([Path("x.tsv")], "nerr")


def test_validate_keeps_mrc_answer_offsets_that_miss_their_text_an_error(tmp_path: Path) -> None:
    """`klue score` accepts such gold with a warning (the metric reads only answer texts); validation
    holds the file to its format."""
    context = "1989년 2월 15일 여의도 농민 폭력 시위를 주도한 혐의로 지명수배되었다."
    question = {"question": "어디?", "answers": [{"text": "여의도", "answer_start": 2}], "question_type": 1,
                "is_impossible": False, "guid": "klue-mrc-v1_dev_00009"}
    document = {"version": "v1.1", "data": [{"title": "t", "news_category": None, "source": "wikipedia",
                                             "paragraphs": [{"context": context, "qas": [question]}]}]}
    path = write(tmp_path / "klue-mrc-v1.1_dev.json", json.dumps(document, ensure_ascii=False))
    report = validate.validate_file(path)
    assert (report.task, report.reader, report.n_records) == ("mrc", "official", 0)
    assert [p.location for p in report.errors] == ["$.data[0].paragraphs[0].qas[0].answers[0]"]
    assert "not the answer text '여의도'" in report.errors[0].message


@pytest.mark.parametrize("name, reader", [
    ("korsts/sts-dev.tsv", "korsts"), ("x/dev.conllu", "conllu"), ("x/klue-sts-v1.1_dev.json", "official"),
    ("x/dev.tsv", "official"), ("x/sts.parquet", "parquet"), ("saved", "datasets"), ("saved:validation", "datasets"),
])
def test_one_rule_tells_the_format_for_every_command(tmp_path: Path, name: str, reader: str) -> None:
    """`klue data validate`, `klue score` (gold without --gold-format) and the `files` protocol tell a
    file's format by one function: directories and parquet files included."""
    from klue.tasks import reading

    (tmp_path / "saved").mkdir()
    path = tmp_path / name
    task = registry.get("dp" if name.endswith(".conllu") else "sts")
    assert reading.infer_format(task, path) == reader == validate.detect(path, task.name).reader


def _nli_copy(tmp_path: Path) -> tuple[Path, Path, int]:
    """An NLI file, its rows as a parquet file and as a save_to_disk DatasetDict (split `validation`)."""
    pytest.importorskip("datasets")
    from klue.io import hf
    from klue.tasks import hf_copy

    gold = write(tmp_path / "gold.json", json.dumps(NLI_PAIRS, ensure_ascii=False))
    task = registry.get("nli")
    records = task.read(gold, ProblemLog(str(gold)))
    parquet = tmp_path / "nli-copy.parquet"
    hf_copy.dataset_of(task, records).to_parquet(str(parquet))
    saved = tmp_path / "nli-saved"
    hf.write_dataset_dict(saved, {"validation": hf_copy.dataset_of(task, records)})
    return parquet, saved, len(records)


def test_hugging_face_copies_validate_as_copies(tmp_path: Path) -> None:
    parquet, saved, n = _nli_copy(tmp_path)
    reports = validate.validate_paths([parquet, Path(f"{saved}:validation")])
    assert [(r.task, r.reader, r.n_records, r.errors) for r in reports] == [("nli", "parquet", n, []),
                                                                            ("nli", "datasets", n, [])]
    # A save_to_disk directory is one item, not a folder to search; a DatasetDict needs its split named.
    (report,) = validate.validate_paths([saved])
    assert (report.task, report.reader) == ("nli", "datasets") and "name one" in report.errors[0].message
    (missing,) = validate.validate_paths([tmp_path / "gone.parquet"], "nli")
    assert missing.reader == "parquet" and "no such file" in missing.errors[0].message
    # `klue score` reads the same copies as gold, told the same way.
    from klue.scoring import score_files

    predictions = write(tmp_path / "p.jsonl", "".join(json.dumps({"guid": p["guid"], "label": p["gold_label"]}) + "\n"
                                                      for p in NLI_PAIRS))
    for gold, fmt in ((parquet, "parquet"), (Path(f"{saved}:validation"), "datasets")):
        result = score_files(registry.get("nli"), gold, predictions)
        assert (result.gold_format, result.report.scores["accuracy"]) == (fmt, 100.0)


NLI_PAIRS = [{"guid": f"klue-nli-v1_dev_{i:05d}", "source": "NSMC", "premise": "전제 문장", "hypothesis": f"가설 {i}",
              "gold_label": label, "author": label, "label2": label, "label3": label, "label4": label,
              "label5": label} for i, label in enumerate(("entailment", "contradiction", "neutral"))]


def test_a_file_without_gold_is_refused_by_validation(tmp_path: Path) -> None:
    """Examples to predict (`klue predict`) may leave their gold out; a data file checked may not."""
    pairs = [{k: v for k, v in pair.items() if k in ("guid", "source", "premise", "hypothesis")} for pair in NLI_PAIRS]
    report = validate.validate_file(write(tmp_path / "nli" / "to-predict.json", json.dumps(pairs, ensure_ascii=False)))
    assert report.task == "nli" and report.n_records == 0
    assert {p.message for p in report.errors} >= {"missing field `gold_label`", "missing field `label5`"}


RE_SENTENCE = "〈Something〉는 조지 해리슨이 쓰고 비틀즈가 1969년 앨범 《Abbey Road》에 담은 노래다."


def test_validate_keeps_re_entity_offsets_that_miss_their_word_an_error(tmp_path: Path) -> None:
    """`klue score` accepts such gold with a warning (the RE metric never reads an offset,
    tests/tasks/re); validation holds the file to its format."""
    example = {"guid": "klue-re-v1_dev_00000", "sentence": RE_SENTENCE,
               "subject_entity": {"word": "비틀즈", "start_idx": 24, "end_idx": 26, "type": "ORG"},
               "object_entity": {"word": "조지 해리슨", "start_idx": 12, "end_idx": 17, "type": "PER"},
               "label": "no_relation", "source": "wikipedia"}
    report = validate.validate_file(write(tmp_path / "klue-re-v1.1_dev.json", json.dumps([example], ensure_ascii=False)))
    assert (report.task, report.n_records) == ("re", 0)
    assert [p.location for p in report.errors] == ["$[0].object_entity"]
    assert "not the entity word '조지 해리슨'" in report.errors[0].message
