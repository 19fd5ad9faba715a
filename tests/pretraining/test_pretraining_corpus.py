"""Corpus files into tokenizers and pseudonymised corpora: encodings, BOM and NUL bytes, vocabulary floor,
file modes."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from klue.errors import DataError
from klue.pretraining.corpus import read_corpus
from klue.pretraining.pii import PiiDetector, pseudonymise_files
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


def test_missing_file_and_directory_are_told_apart(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is a directory, not a file") as error:
        read_corpus([tmp_path])
    (problem,) = error.value.problems
    assert problem.path == str(tmp_path) and "not found" not in problem.message and "missing" not in problem.message
    with pytest.raises(DataError, match="No such file"):
        read_corpus([tmp_path / "absent.txt"])


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
