"""`klue data validate` logic: task detection, reading, counts, every problem, comparison with official."""

from __future__ import annotations

from pathlib import Path

import pytest

from klue import registry, validate
from klue.errors import DataError

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
