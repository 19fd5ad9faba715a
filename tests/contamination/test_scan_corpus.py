"""Corpora in every format give the same findings; a scan resumes per corpus file; a corpus that cannot be read
is named, with nothing half-written (workers and Ray: test_scan_workers.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from scan_helpers import ARTICLE, EXAMPLES, OTHER, SECOND, SHORT, corpus_lines, scan, write_jsonl

from klue.contamination.corpus import expand
from klue.contamination.index import build_index
from klue.contamination.run import STATE_DIR, ScanOptions, scan_corpus
from klue.contamination.units import Settings
from klue.errors import DataError

LINES = corpus_lines(f"{ARTICLE} 그 밖의 소식", "가나다", f"{SECOND} {SHORT} neutral", "", OTHER[:20])


def summary_of(result: object) -> dict[int, tuple[int, int, str]]:
    """example -> (first line, longest, with the answer or not), what every format must agree on."""
    return {k: (f.first_at.line, f.longest, str(f.with_answer_at is not None))
            for k, f in result.findings.items()}  # type: ignore[attr-defined]


def _parquet(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": list(range(len(LINES))), "text": LINES}), path, row_group_size=2)
    return path


def _datasets(path: Path) -> Path:
    from datasets import Dataset

    Dataset.from_dict({"text": LINES}).save_to_disk(str(path))
    return path


def _zstd(path: Path) -> Path:
    import zstandard

    path.write_bytes(zstandard.ZstdCompressor().compress("\n".join(LINES).encode() + b"\n"))
    return path


def test_every_format_gives_the_same_findings(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    expected = summary_of(scan([plain]))
    assert set(expected) == {0, 1} and expected[1][2] == "True" and expected[0][0] == 3
    jsonl = write_jsonl(tmp_path / "lines.jsonl", LINES)
    zipped = tmp_path / "lines.jsonl.gz"
    zipped.write_bytes(gzip.compress(jsonl.read_bytes()))
    made = [jsonl, zipped, _zstd(tmp_path / "plain.txt.zst"), _parquet(tmp_path / "rows.parquet"),
            _datasets(tmp_path / "saved")]
    documents = scan([plain]).files[0].documents
    assert documents == len([line for line in LINES if line])
    for path in made:
        result = scan([path])
        assert summary_of(result) == expected and result.files[0].documents == documents, path
    assert [f.kind for f in expand([str(p) for p in made])] == ["jsonl", "jsonl", "text", "parquet", "datasets"]


def test_directories_and_globs(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    write_jsonl(folder / "b.jsonl", ["가나다"])
    write_jsonl(folder / "sub" / "a.jsonl", [ARTICLE])
    (folder / ".hidden").write_text(ARTICLE, encoding="utf-8")
    assert [Path(f.shown).name for f in expand([str(folder)])] == ["b.jsonl", "a.jsonl"]
    assert [Path(f.shown).name for f in expand([str(folder / "**" / "*.jsonl")])] == ["b.jsonl", "a.jsonl"]
    with pytest.raises(DataError, match="matches no file"):
        expand([str(folder / "*.parquet")])
    with pytest.raises(DataError, match="no such file"):
        expand([str(tmp_path / "absent.jsonl")])


def test_a_jsonl_text_field_is_chosen(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [ARTICLE], field="content")
    assert scan([corpus], text_field="content").findings
    with pytest.raises(DataError, match="no field 'text'.*content"):
        scan([corpus])


def test_a_scan_resumes_per_corpus_file(tmp_path: Path) -> None:
    one = write_jsonl(tmp_path / "one.jsonl", [ARTICLE])
    two = write_jsonl(tmp_path / "two.jsonl", [SECOND])
    state = tmp_path / "out" / STATE_DIR
    first = scan([one, two], state_dir=state)
    assert [f.resumed for f in first.files] == [False, False] and len(list(state.iterdir())) == 2
    two.write_text(json.dumps({"text": OTHER}, ensure_ascii=False) + "\n", encoding="utf-8")  # a changed file
    again = scan([one, two], state_dir=state)
    assert [f.resumed for f in again.files] == [True, False]
    assert set(again.findings) == {0, 2} and again.files[0].digest == first.files[0].digest
    other_n = scan([one, two], Settings("eojeol", 9, "klue"), state_dir=state)  # other settings: read again
    assert [f.resumed for f in other_n.files] == [False, False]
    kept = state / "file-00000.json"  # a state an older klue kept (another layout): read again
    kept.write_text(json.dumps({**json.loads(kept.read_text(encoding="utf-8")), "version": 1}), encoding="utf-8")
    assert [f.resumed for f in scan([one, two], Settings("eojeol", 9, "klue"), state_dir=state).files] == [
        False, True]


@pytest.mark.parametrize("case", ["cp949", "cut-gzip", "not-json", "no-field-later"])
def test_an_unreadable_corpus_file_is_named(tmp_path: Path, case: str) -> None:
    bad = tmp_path / "bad.jsonl"
    good = write_jsonl(tmp_path / "good.jsonl", [ARTICLE])
    if case == "cp949":
        bad = tmp_path / "bad.txt"
        bad.write_bytes("첫 줄\n".encode() + "둘째 줄".encode("cp949") + b"\n")
    elif case == "cut-gzip":
        bad = tmp_path / "bad.jsonl.gz"
        bad.write_bytes(gzip.compress(("\n".join(json.dumps({"text": t}) for t in LINES * 200)).encode())[:-40])
    elif case == "not-json":
        bad.write_text('{"text": "가"}\n{"text": \n', encoding="utf-8")
    else:  # past the start that is checked before any work
        bad.write_text('{"text": "가"}\n' * 5000 + '{"body": "나"}\n', encoding="utf-8")
    index = build_index(EXAMPLES, Settings())
    state = tmp_path / "out" / STATE_DIR
    with pytest.raises(DataError) as error:
        scan_corpus(index, expand([str(good), str(bad)]), ScanOptions(chunk_bytes=64), state)
    problem = error.value.problems[0]
    assert problem.path == str(bad) and problem.location, problem
    where = {"cp949": "line 2", "not-json": "line 2", "no-field-later": "line 5001"}
    if case in where:
        assert problem.location == where[case]
    if case in ("cp949", "not-json"):  # found by the check of every file's start: nothing was done
        assert not (tmp_path / "out").exists()
    else:  # found mid-way: the good file's findings are kept for a resume, nothing of the bad one
        assert sorted(p.name for p in state.iterdir()) == ["file-00000.json"]
