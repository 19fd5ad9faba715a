"""Corpus files into tokenizers and pseudonymised corpora: encodings, BOM and NUL bytes, vocabulary floor,
file modes."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from klue.errors import DataError
from klue.pretraining.corpus import iter_corpus, read_corpus, read_corpus_text, reservoir_sample
from klue.pretraining.pii import PiiDetector
from klue.pretraining.pii_parallel import pseudonymise_files
from klue.pretraining.tokenizer import ALGORITHMS, TokenizerSpec, save_tokenizer, train_tokenizer

LINES = ["그는 서울에서 학교를 다녔다.", "여자가 기타를 치면서 노래를 부르고 있습니다.", "오늘 날씨는 맑고 기온은 영상 12도입니다."]


def corpus_file(tmp_path: Path, data: bytes, name: str = "corpus.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def message_of(error: pytest.ExceptionInfo[DataError]) -> str:
    return error.value.summary()


def test_cp949_corpus_names_file_line_and_conversion(tmp_path: Path) -> None:
    path = corpus_file(tmp_path, ("ascii first\n" + "\n".join(LINES)).encode("cp949"))
    with pytest.raises(DataError) as error:
        read_corpus([path])
    message = message_of(error)
    assert f"{path}:line 2:" in message and "CP949 (EUC-KR)" in message
    assert f"iconv -f cp949 -t utf-8 {path} > {path}.utf8" in message


def test_utf16_corpus_is_recognised(tmp_path: Path) -> None:
    path = corpus_file(tmp_path, "\n".join(LINES).encode("utf-16"))
    with pytest.raises(DataError, match="UTF-16.*iconv -f utf-16 "):
        read_corpus([path])


def test_missing_file_and_empty_directory_are_told_apart(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="a corpus directory with no files in it") as error:
        read_corpus([tmp_path])
    (problem,) = error.value.problems
    assert problem.path == str(tmp_path) and "not found" not in problem.message and "missing" not in problem.message
    with pytest.raises(DataError, match="No such file"):
        read_corpus([tmp_path / "absent.txt"])
    with pytest.raises(DataError, match="is a directory, not a file"):  # one file, as the PII reader reads it
        read_corpus_text(tmp_path)


def test_every_format_streams_the_same_texts(tmp_path: Path) -> None:
    import gzip

    import zstandard

    texts = [f"{line} {i}" for i in range(30) for line in LINES]
    plain = "\n\n".join(texts).encode() + b"\n"
    jsonl = "".join(json.dumps({"text": t, "id": i}, ensure_ascii=False) + "\n" for i, t in enumerate(texts)).encode()
    files = {"a.txt": plain, "b.txt.gz": gzip.compress(plain), "c.txt.zst": zstandard.ZstdCompressor().compress(plain),
             "d.jsonl": jsonl, "e.jsonl.gz": gzip.compress(jsonl), "f.jsonl.zst": zstandard.ZstdCompressor().compress(jsonl)}
    for name, data in files.items():
        path = corpus_file(tmp_path, data, name)
        assert list(iter_corpus([path])) == texts, name
    shards = tmp_path / "shards"
    (shards / "sub").mkdir(parents=True)
    for index, name in enumerate(["10.txt", "2.txt", "sub/00.txt", ".hidden.txt"]):
        (shards / name).write_text(f"shard {name}\n", encoding="utf-8")
        assert index < 4
    assert read_corpus([shards]) == ["shard 10.txt", "shard 2.txt", "shard sub/00.txt"]  # sorted paths, no hidden


def test_a_datasets_dataset_streams(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_dict({"text": [*LINES, "  "], "n": [1, 2, 3, 4]})
    assert list(iter_corpus([dataset])) == LINES
    dataset.save_to_disk(str(tmp_path / "saved"))
    assert read_corpus([tmp_path / "saved"]) == LINES
    datasets.DatasetDict({"train": dataset}).save_to_disk(str(tmp_path / "dict"))
    assert read_corpus([f"{tmp_path / 'dict'}:train"]) == LINES
    with pytest.raises(DataError, match="no 'body' column"):
        read_corpus([dataset], text_field="body")


def test_problems_after_the_first_block_name_their_line(tmp_path: Path) -> None:
    import gzip

    filler = ("가나다라마바사 " * 20 + "\n").encode() * 12_000  # > 2 blocks of 1 MiB
    n = filler.count(b"\n")
    path = corpus_file(tmp_path, filler + "\n".join(LINES).encode("cp949"), "late.txt.gz")
    path.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(DataError) as error:
        list(iter_corpus([path]))
    assert f"{path}:line {n + 1}: error: bytes that are not UTF-8 at byte offset {len(filler)}" in message_of(error)
    assert "CP949 (EUC-KR)" in message_of(error)
    path = corpus_file(tmp_path, filler + b"ok\n\x00\nfine\n\x00x\n", "late_nul.txt")
    with pytest.raises(DataError) as error:
        list(iter_corpus([path]))
    assert f"{path}:line {n + 2}: error: a NUL byte" in message_of(error) and "1 more lines" in message_of(error)
    jsonl = b"".join(json.dumps({"text": "가" * 300}).encode() + b"\n" for _ in range(5000))
    path = corpus_file(tmp_path, jsonl + b'{"text": 1}\nnot json\n', "late.jsonl")
    with pytest.raises(DataError) as error:
        list(iter_corpus([path]))
    assert f"{path}:line 5001: error: expected an object" in message_of(error)
    assert f"{path}:line 5002: error: not JSON" in message_of(error)


def test_reservoir_sample_is_seeded_uniform_and_in_stream_order() -> None:
    texts = [str(i) for i in range(2000)]
    first = reservoir_sample(iter(texts), 100, seed=7)
    assert first == reservoir_sample(iter(texts), 100, seed=7) != reservoir_sample(iter(texts), 100, seed=8)
    assert len(set(first)) == 100 and [int(t) for t in first] == sorted(int(t) for t in first)
    assert reservoir_sample(iter(texts[:50]), 100, seed=7) == texts[:50]
    # uniform: over many seeds every position is drawn about 100/2000 of the time (late ones too)
    counts = [0] * 4
    for seed in range(200):
        for text in reservoir_sample(iter(texts), 100, seed):
            counts[int(text) * 4 // 2000] += 1
    assert all(abs(c / (200 * 25) - 1) < 0.1 for c in counts), counts
    with pytest.raises(DataError, match="at least one"):
        reservoir_sample(iter(texts), 0, seed=1)


def test_a_leading_bom_is_dropped_and_never_a_vocabulary_entry(tmp_path: Path) -> None:
    path = corpus_file(tmp_path, b"\xef\xbb\xbf" + "\n".join(LINES).encode("utf-8"))
    texts = read_corpus([path])
    assert texts == LINES
    tokenizer = train_tokenizer(texts, TokenizerSpec("wordpiece", "whitespace", 400, min_frequency=1))
    assert not [token for token in tokenizer.get_vocab() if "\ufeff" in token]


def test_nul_bytes_are_refused_with_file_and_line(tmp_path: Path) -> None:
    path = corpus_file(tmp_path, ("\n".join(LINES[:2]) + "\n가나\0다\n라\0\n").encode("utf-8"))
    with pytest.raises(DataError) as error:
        read_corpus([path])
    assert f"{path}:line 3:" in message_of(error) and "NUL byte" in message_of(error)
    assert "1 more lines" in message_of(error)


def test_texts_given_in_code_keep_bom_and_nul_out_of_the_vocabulary() -> None:
    texts = ["\ufeff" + LINES[0], LINES[1].replace(" ", "\0"), LINES[2]]
    tokenizer = train_tokenizer(texts, TokenizerSpec("bpe", "whitespace", 400, min_frequency=1))
    assert not [token for token in tokenizer.get_vocab() if "\ufeff" in token or "\0" in token]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_vocabulary_below_the_alphabet_is_refused_with_the_minimum(algorithm: str) -> None:
    texts = LINES * 3
    with pytest.raises(DataError, match="--vocab-size 20 is below") as error:
        train_tokenizer(texts, TokenizerSpec(algorithm, "whitespace", 20, min_frequency=1))  # type: ignore[arg-type]
    minimum = int(message_of(error).rsplit("use --vocab-size ", 1)[1].split()[0])
    assert f"take {minimum} entries" in message_of(error)
    # The minimum is exact: asked for it, the trainer gives that many, no more.
    tokenizer = train_tokenizer(texts, TokenizerSpec(algorithm, "whitespace", minimum, min_frequency=1))  # type: ignore[arg-type]
    assert len(tokenizer) == minimum


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def modes_under(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in root.rglob("*") if p.is_file()}


@pytest.mark.usefixtures("umask_022")
def test_written_tokenizer_and_pseudonymised_corpus_follow_the_umask(tmp_path: Path) -> None:
    spec = TokenizerSpec("wordpiece", "whitespace", 400, min_frequency=1)
    out = save_tokenizer(train_tokenizer(LINES, spec), spec, tmp_path / "tok")
    tokenizer_modes = modes_under(out)
    assert "tokenizer.json" in tokenizer_modes and "klue_tokenizer.json" in tokenizer_modes
    assert set(tokenizer_modes.values()) == {0o644}, tokenizer_modes
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    source = corpus_file(tmp_path, "홍길동 씨의 연락처는 010-1234-5678입니다.\n".encode(), "in.txt")
    pseudonymise_files([str(source)], str(tmp_path / "pii"), PiiDetector(kinds=("phone",)), seed=1)
    assert modes_under(tmp_path / "pii") == {"in.txt": 0o644, "pii_report.json": 0o644}
