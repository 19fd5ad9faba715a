"""The one reading layer (`klue.tasks.reading.read`): the format told once (and said to be told), the
purpose handed to the reader, problems returned to validate and raised otherwise, one hint on the format
whichever command reads, and sources without records refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from klue import registry
from klue.errors import DataError
from klue.tasks.reading import CopyRows, read

KORSTS = ("genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\n"
          "main-captions\tMSRvid\t2012test\t0000\t5.000\t한 남자가 춤을 춘다.\t남자가 춤을 춘다.\n"
          "main-captions\tMSRvid\t2012test\t0002\t1.250\t아이가 말을 탄다.\t개가 달린다.\n")
STS = [{"guid": f"klue-sts-v1_dev_{i:05d}", "source": "airbnb-rtt", "sentence1": "숙소 위치는 찾기 쉽다.",
        "sentence2": f"숙소 위치는 쉽게 찾을 수 있다 {i}.",
        "labels": {"label": 4.0, "real-label": 4.0, "binary-label": 1},
        "annotations": {"agreement": "0:0:0:0:3:0", "annotators": ["x", "y", "z"], "annotations": [4, 4, 4]}}
       for i in range(3)]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_format_is_told_once_and_said_to_be_told(tmp_path: Path) -> None:
    task = registry.get("sts")
    korsts = write(tmp_path / "korsts" / "dev.tsv", KORSTS)
    told = read(task, korsts, purpose="train")
    assert (told.format, told.inferred, len(told.records), told.shown) == ("korsts", True, 2, str(korsts))
    official = write(tmp_path / "dev.json", json.dumps(STS, ensure_ascii=False))
    given = read(task, official, "official", purpose="score")
    assert (given.format, given.inferred, len(given.records), given.identified) == ("official", False, 3, official)


def test_the_purpose_reaches_the_reader(tmp_path: Path) -> None:
    """A file without gold reads for prediction only: the purpose, not the caller, decides."""
    task = registry.get("sts")
    unlabelled = write(tmp_path / "new.json", json.dumps([{k: v for k, v in r.items() if k not in ("labels",
                                                          "annotations")} for r in STS], ensure_ascii=False))
    assert [r.labelled for r in read(task, unlabelled, purpose="predict").records] == [False] * 3
    for purpose in ("train", "score", "export"):
        with pytest.raises(DataError, match=r"\$\[0\]\.labels: error: missing field `labels`"):
            read(task, unlabelled, purpose=purpose)  # type: ignore[arg-type]


def test_validation_gets_the_problems_and_nothing_is_raised(tmp_path: Path) -> None:
    task = registry.get("sts")
    broken = write(tmp_path / "dev.json", json.dumps([STS[0], {**STS[1], "sentence1": 3}], ensure_ascii=False))
    checked = read(task, broken, purpose="validate")
    assert len(checked.records) == 1 and [p.location for p in checked.errors] == ["$[1].sentence1"]
    missing = read(task, tmp_path / "absent.json", purpose="validate")
    assert missing.records == [] and [p.message for p in missing.errors] == ["no such file"]
    with pytest.raises(DataError, match="no such file"):
        read(task, tmp_path / "absent.json", purpose="train")


@pytest.mark.parametrize("purpose, option", [("score", "--gold-format"), ("predict", "--input-format"),
                                             ("train", "--train-format")])
def test_one_hint_names_the_format_that_reads_the_file(tmp_path: Path, purpose: str, option: str) -> None:
    """Named wrongly, a KorSTS file read as the official format: every command's error leads with the
    option to pass; without an option to name (a protocol's own files) the errors come alone."""
    task = registry.get("sts")
    plain = write(tmp_path / "plain" / "dev.tsv", KORSTS)
    with pytest.raises(DataError) as caught:
        read(task, plain, "official", purpose=purpose, option=option)  # type: ignore[arg-type]
    hint, *errors = caught.value.problems
    assert hint.path == str(plain) and hint.message.endswith(f"it reads cleanly as 'korsts' (2 examples): pass "
                                                             f"{option} korsts")
    assert errors and "invalid JSON" in errors[0].message
    with pytest.raises(DataError) as bare:
        read(task, plain, "official", purpose=purpose)  # type: ignore[arg-type]
    assert "pass" not in bare.value.summary() and "invalid JSON" in bare.value.problems[0].message


def test_rows_already_loaded_read_as_a_copy_and_none_is_refused() -> None:
    """The hub's rows (a list of row objects stands in for a Dataset) go through the same layer; rows
    that make no record (a file's reader says so itself) are refused except to validate."""
    task = registry.get("sts")
    copy = read(task, CopyRows(STS, "hub/validation"), purpose="train")
    assert (copy.format, copy.shown, len(copy.records), copy.identified) == ("datasets", "hub/validation", 3, None)
    assert read(task, CopyRows([], "hub/validation"), purpose="validate").records == []
    with pytest.raises(DataError, match=r"hub/validation: error: holds no sts examples \(read as 'datasets'\)"):
        read(task, CopyRows([], "hub/validation"), purpose="train")


def test_a_file_extension_chooses_among_the_readers_of_that_extension(tmp_path: Path) -> None:
    """A `.tsv` whose name and folder tell nothing is read by the task's TSV reader even where it has an
    error (never as the official JSON, refused as 'invalid JSON'); a `.txt` is still told by its content."""
    from klue.tasks.reading import infer_format, readers_of_extension

    sts, nli, dp, mrc = (registry.get(name) for name in ("sts", "nli", "dp", "mrc"))
    broken = write(tmp_path / "mine" / "part2.tsv", KORSTS.replace("\t5.000\t", "\thigh\t"))
    assert readers_of_extension(sts, broken) == ["korsts"] and infer_format(sts, broken) == "korsts"
    assert readers_of_extension(nli, broken) == ["kornli"] and readers_of_extension(dp, broken) == ["official",
                                                                                                      "conllu"]
    assert readers_of_extension(mrc, tmp_path / "x.json") == ["official", "korquad", "squad", "unchecked-offsets"]
    assert infer_format(sts, write(tmp_path / "mine" / "plain.txt", KORSTS)) == "korsts"  # its content tells
    assert infer_format(sts, write(tmp_path / "mine" / "dev.json", json.dumps(STS))) == "official"
    with pytest.raises(DataError) as caught:
        read(sts, broken, purpose="train", option="--eval-format")
    told, *errors = caught.value.problems
    assert told.message == ("read as the 'korsts' format, told from the file; name another with --eval-format "
                            "(official, korsts, datasets, parquet)")
    assert [e.location for e in errors] == ["line 2"] and "'high' is not a number" in errors[0].message


def test_every_format_error_names_the_format_tried_and_the_option(tmp_path: Path) -> None:
    task = registry.get("sts")
    truncated = write(tmp_path / "mine" / "eval.json", '[{"guid": 1')
    for given, how in ((None, "told from the file"), ("official", "as --eval-format named it")):
        with pytest.raises(DataError) as caught:
            read(task, truncated, given, purpose="train", option="--eval-format")
        told, first = caught.value.problems
        assert told.message.startswith(f"read as the 'official' format, {how}; name another with --eval-format")
        assert "truncated JSON" in first.message
