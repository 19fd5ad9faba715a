"""`klue.io.text`: the one place that reads text says where a file is not UTF-8 and what it likely is."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from klue.errors import ProblemLog
from klue.io.text import encoding_hint, load_json, read_text

KOREAN = "첫째 줄입니다\n한국어 문장이 여기 있습니다\n"


def read(path: Path) -> tuple[str | None, ProblemLog]:
    log = ProblemLog(str(path))
    return read_text(path, log), log


def only_error(log: ProblemLog) -> str:
    (problem,) = log.errors
    return str(problem)


def test_cp949_names_the_line_and_the_conversion(tmp_path: Path) -> None:
    path = tmp_path / "euc kr.txt"  # a space: the command must still be one a shell runs as is
    path.write_bytes(b"ascii line\n" + KOREAN.encode("cp949"))
    text, log = read(path)
    assert text is None
    message = only_error(log)
    assert message.startswith(f"{path}:line 2: ")
    assert "not UTF-8" in message and "it decodes as CP949 (EUC-KR)" in message
    assert f"iconv -f cp949 -t utf-8 {shlex.quote(str(path))} > {shlex.quote(str(path) + '.utf8')}" in message


@pytest.mark.parametrize(("codec", "label", "iconv"), [
    ("utf-16", "UTF-16 (it starts with a byte-order mark)", "-f utf-16 "),  # Python writes a BOM
    ("utf-16-le", "UTF-16LE (many NUL bytes)", "-f utf-16le "),
    ("utf-16-be", "UTF-16BE (many NUL bytes)", "-f utf-16be "),
])
def test_utf16_is_recognised_with_or_without_a_bom(tmp_path: Path, codec: str, label: str, iconv: str) -> None:
    path = tmp_path / "wide.txt"
    path.write_bytes("plain ascii text\nsecond line\n".encode(codec))  # without a BOM this is valid UTF-8
    text, log = read(path)
    assert text is None
    message = only_error(log)
    assert f"{path}:line 1: " in message and label in message and iconv in message


def test_unknown_bytes_ask_for_utf8_and_keep_the_old_words(tmp_path: Path) -> None:
    path = tmp_path / "binary.bin"
    path.write_bytes(b"ok\n\xff\xfa\xfb\xfc\xfd\n")
    _, log = read(path)
    message = only_error(log)
    assert ":line 2: " in message and "bytes that are not UTF-8 at byte offset 3" in message
    assert "save it as UTF-8" in message and "iconv" not in message


def test_every_reader_gets_the_hint(tmp_path: Path) -> None:
    path = tmp_path / "records.json"
    path.write_bytes('[{"sentence": "한국어 문장"}]'.encode("cp949"))
    log = ProblemLog(str(path))
    assert load_json(path, log) is None
    assert "CP949" in only_error(log)


def test_a_directory_is_not_reported_as_missing(tmp_path: Path) -> None:
    text, log = read(tmp_path)
    assert text is None
    (problem,) = log.errors
    assert (problem.path, problem.location, problem.message) == (str(tmp_path), "", "is a directory, not a file")
    _, log = read(tmp_path / "absent.txt")
    assert "No such file" in only_error(log)


def test_utf8_with_a_bom_reads_without_it(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + KOREAN.encode("utf-8"))
    text, log = read(path)
    assert text == KOREAN and not log.problems


def test_hint_without_a_path_uses_placeholders() -> None:
    assert encoding_hint(KOREAN.encode("cp949")).endswith("iconv -f cp949 -t utf-8 FILE > FILE.utf8")
