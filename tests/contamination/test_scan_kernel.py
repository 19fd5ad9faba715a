"""The compiled pass over plain text (`kernel`, numba) against the numpy reference (`Hasher.line_ngrams`): the
same hashes, lines, positions and code points, bit for bit, on Korean text, random Unicode and every setting;
the index's packed bitmap lets through what its lookup would; bytes that are not UTF-8 are refused as Python's
decoder refuses them."""

from __future__ import annotations

import json
import os
import random
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from scan_helpers import ARTICLE, EXAMPLES, NOISE, OTHER, SECOND, SHORT

from klue.contamination import kernel
from klue.contamination.corpus import expand
from klue.contamination.examples import TaskSet
from klue.contamination.index import Example, build_index
from klue.contamination.run import EXAMPLES_FILE, SUMMARY_FILE, ScanOptions, scan_corpus, write_outputs
from klue.contamination.units import Hasher, Ngrams, Settings
from klue.io.provenance import DataSource

pytestmark = pytest.mark.skipif(not kernel.AVAILABLE, reason="numba absent: pip install 'klue[contamination]'")

SETTINGS = [Settings("eojeol", 8, "klue"), Settings("eojeol", 2, "klue"), Settings("char", 25, "klue"),
            Settings("char", 3, "klue"), Settings("word", 13, "gpt3"), Settings("word", 1, "gpt3"),
            Settings("char", 5, "gpt3")]
NO_BITS = np.zeros(0, dtype=np.uint8)

KOREAN = ["1934년 7월 사이토 내각을 이어 출범한 오카다 게이스케 내각은 과격파 청년 장교들의 계속되는 갈등 유발과",
          "점령지 주민들의 계속되는 저항에 부딪쳤다.  KLUE의 ‘테스트’입니다, Straße!  끝…", "",
          "\t탭과\r\n캐리지 리턴, 그리고 --- 대시 -- 와 \"따옴표\" (괄호) [대괄호] 한국어 문장 하나 둘 셋 넷 다섯 여섯",
          unicodedata.normalize("NFD", "분해된 한글 문장은 파이썬이 합칩니다 하나 둘 셋 넷"), "ǅ Ǆ ß ﬁ İ Σ ς 𝔘𝔫𝔦",
          "e\u0301 a\u0308 한\u11a8 \U0001F600 이모지 \u2028 줄 \u00a0 공백 \u3000 전각"]


def _random_line(rng: random.Random) -> str:
    pools = [range(0x20, 0x7F), range(0xAC00, 0xAC40), range(0x1100, 0x1200), range(0x300, 0x370),
             range(0xC0, 0x250), range(0x2000, 0x2070), range(0x3000, 0x3040), range(0xF900, 0xF910),
             range(0x1F600, 0x1F610), range(0xFB00, 0xFB07)]
    out = []
    for _ in range(rng.randrange(0, 60)):
        pool = pools[rng.randrange(len(pools))] if rng.random() < 0.5 else range(0xAC00, 0xD7A4)
        out.append(" " if rng.random() < 0.2 else chr(rng.choice(pool)))
    return "".join(out)


def _compare(text: str, settings: Settings) -> None:
    hasher = Hasher(settings)
    expected = hasher.line_ngrams(text)
    got = hasher.line_candidates(text.encode("utf-8"), NO_BITS, 0)
    assert got is not None
    _assert_same(got, expected)
    every_line = list(range(len(expected.starts)))
    assert got.units_in(every_line, settings.unit) == expected.units_in(every_line, settings.unit)


def _assert_same(got: Ngrams, expected: Ngrams) -> None:
    order_got = np.lexsort((got.position, got.text))
    order_expected = np.lexsort((expected.position, expected.text))
    assert got.hashes[order_got].tolist() == expected.hashes[order_expected].tolist()
    assert got.text[order_got].tolist() == expected.text[order_expected].tolist()
    assert got.position[order_got].tolist() == expected.position[order_expected].tolist()
    if not got.composed:  # else the composed lines' code points are kept apart (compared through units_in)
        assert got.points.tolist() == expected.points.tolist()
        assert got.starts.tolist() == expected.starts.tolist()
    assert len(got.starts) == len(expected.starts)


@pytest.mark.parametrize("settings", SETTINGS, ids=str)
def test_the_pass_hashes_as_the_numpy_reference(settings: Settings) -> None:
    _compare("\n".join(KOREAN), settings)
    for seed in range(4):  # lines needing Python first, last, between and next to each other
        rng = random.Random(seed)
        _compare("\n".join(rng.sample(KOREAN, len(KOREAN))), settings)


@pytest.mark.parametrize("settings", SETTINGS, ids=str)
def test_the_pass_hashes_random_unicode_as_the_numpy_reference(settings: Settings) -> None:
    rng = random.Random(41)
    for _ in range(30):
        _compare("\n".join(_random_line(rng) for _ in range(rng.randrange(1, 12))), settings)


def test_the_pass_on_real_korean_text() -> None:
    extra = os.environ.get("KLUE_EXTRA_DATA_DIR")
    path = Path(extra or "/nonexistent") / "korean" / "korquad-v1" / "KorQuAD_v1.0_dev.json"
    if not path.is_file():
        pytest.skip("KLUE_EXTRA_DATA_DIR with korean/korquad-v1/KorQuAD_v1.0_dev.json absent")
    articles = json.loads(path.read_text(encoding="utf-8"))["data"][:40]
    text = "\n".join(p["context"].replace("\n", " ") for a in articles for p in a["paragraphs"])
    for settings in (Settings("eojeol", 8, "klue"), Settings("char", 25, "klue"), Settings("word", 13, "gpt3")):
        _compare(text, settings)


def test_the_packed_bitmap_lets_through_what_the_lookup_keeps() -> None:
    settings = Settings("eojeol", 3, "klue")
    examples = [Example("nli", f"g{i}", (line,), ()) for i, line in enumerate(KOREAN)]
    index = build_index(examples, settings)
    corpus = "\n".join([*KOREAN, "관계없는 문장 하나 둘 셋 넷 다섯 여섯 일곱", *reversed(KOREAN)])
    hasher = Hasher(settings)
    full = hasher.line_ngrams(corpus)
    candidates = hasher.line_candidates(corpus.encode("utf-8"), index.bits, index.shift)
    assert candidates is not None
    through = index.bitmap[(full.hashes >> np.uint64(index.shift)).astype(np.int64)]
    assert sorted(candidates.hashes.tolist()) == sorted(full.hashes[through].tolist())
    hit, _ = index.lookup(candidates.hashes)
    expected_hit, _ = index.lookup(full.hashes)
    assert sorted(candidates.hashes[hit].tolist()) == sorted(full.hashes[expected_hit].tolist())
    assert len(expected_hit) > 0


@pytest.mark.parametrize("bad", [b"\xff", b"\xc0\x80", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                                 b"\xf5\x80\x80\x80", b"\xe4\xb8", b"\x80", b"\xc3", b"\xf0\x9f\x98"])
def test_bytes_python_refuses_are_refused(bad: bytes) -> None:
    data = "한국어 줄\n".encode() + bad + " 뒤".encode()
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    assert Hasher(Settings()).line_candidates(data, NO_BITS, 0) is None


def test_every_valid_sequence_length_is_read() -> None:
    text = "a é 한 😀 \u0800 \uffff \U00010000 \U0010ffff"
    _compare(text, Settings("char", 1, "klue"))


def test_a_scan_writes_the_same_with_the_pass_as_with_numpy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole scan of a plain-text corpus with copies (some decomposed, so their lines go through Python, some
    re-cased): the same examples.jsonl, and summary but for the run's figures, with and without the pass."""
    rng = random.Random(41)
    lines = [rng.choice(NOISE) for _ in range(200)]
    for text in [ARTICLE, f"{SECOND} {SHORT} neutral", unicodedata.normalize("NFD", f"{OTHER} contradiction"),
                 f"{ARTICLE} 그리고 {ARTICLE.upper()}", "", unicodedata.normalize("NFD", SECOND)] * 3:
        lines.insert(rng.randrange(len(lines)), text)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    outputs = []
    for available in (True, False):
        monkeypatch.setattr(kernel, "AVAILABLE", available)
        for settings in (Settings(), Settings("char", 25, "klue"), Settings("word", 5, "gpt3")):
            out = tmp_path / f"{available}-{settings.unit}"
            index = build_index(EXAMPLES, settings)
            result = scan_corpus(index, expand([str(corpus)]), ScanOptions(chunk_bytes=700))
            source = DataSource("examples", "0" * 40, len(EXAMPLES), "scanned")
            write_outputs(out, index, [TaskSet("nli", EXAMPLES, source, "test")], result, {"settings": {}})
            summary = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
            assert summary.pop("run")["plain_text_hashing"] == ("numba" if available else "numpy")
            outputs.append(((out / "nli" / EXAMPLES_FILE).read_bytes(), summary))
    assert outputs[:3] == outputs[3:]
    rows = [json.loads(line) for line in outputs[0][0].decode().splitlines()]
    assert [r["dirty_input"] for r in rows] == [True, True, True, False]
