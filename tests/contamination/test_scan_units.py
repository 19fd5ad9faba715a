"""Units and their n-gram hashes: the normalisations, the units, and hashes that depend on the n-gram alone
(not on its document, position or batch)."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest

from klue.contamination.units import Hasher, Settings, codepoints, line_codepoints, normalised, units
from klue.errors import DataError


def test_klue_normalisation_nfc_casefold_and_punctuation_as_space() -> None:
    text = "KLUE의 ‘테스트’입니다, Straße!  끝…"
    assert normalised(text, "klue") == "klue의 테스트 입니다 strasse 끝"
    assert units(unicodedata.normalize("NFD", text), Settings()) == units(text, Settings())
    assert unicodedata.normalize("NFD", "한국") != "한국"  # the NFD copy is other code points


def test_gpt3_normalisation_is_the_janitors() -> None:
    # ASCII lower-cased, ASCII punctuation deleted (not a break), nothing else touched
    assert units("Don't STOP-me ‘Ünïcode’ 한국!", Settings("word", 13, "gpt3")) == ["dont", "stopme",
                                                                                  "‘Ünïcode’", "한국"]


def test_char_units_drop_every_break() -> None:
    assert units("가 나,다  라", Settings("char", 3, "klue")) == ["가", "나", "다", "라"]


@pytest.mark.parametrize("unit", ["eojeol", "char", "word"])
def test_hashes_depend_on_the_ngram_alone(unit: str) -> None:
    settings = Settings.of(unit, 3, "klue")
    hasher = Hasher(settings)
    texts = ["하나 둘 셋 넷 다섯", "영 하나 둘 셋", "셋 넷 다섯"]
    ngrams = hasher.ngrams(texts)
    by_text: dict[str, set[int]] = {}
    for h, t, p in zip(ngrams.hashes.tolist(), ngrams.text.tolist(), ngrams.position.tolist()):
        gram = settings.joiner.join(units(texts[t], settings)[p:p + 3])
        by_text.setdefault(gram, set()).add(h)
    assert all(len(hashes) == 1 for hashes in by_text.values()), by_text  # one n-gram, one hash
    assert len({next(iter(h)) for h in by_text.values()}) == len(by_text)  # distinct n-grams, distinct hashes
    again = Hasher(settings).ngrams(texts[1:])  # another batch, another hasher: the same hashes
    assert set(again.hashes.tolist()) <= set(ngrams.hashes.tolist())


def test_ngrams_never_span_two_texts() -> None:
    ngrams = Hasher(Settings("eojeol", 2, "klue")).ngrams(["가", "나", "다 라"])
    assert ngrams.text.tolist() == [2] and ngrams.position.tolist() == [0]


def test_positions_count_units_within_each_text() -> None:
    ngrams = Hasher(Settings("char", 2, "klue")).ngrams(["가 나다", "라마"])
    assert list(zip(ngrams.text.tolist(), ngrams.position.tolist())) == [(0, 0), (0, 1), (1, 0)]
    assert ngrams.hashes.dtype == np.uint64


@pytest.mark.parametrize("first", [0, 1, 3])
def test_a_chunks_lines_needing_nfc_are_fixed_in_place(first: int) -> None:
    """A plain-text chunk's lines that need NFC or a fold of several characters are normalised where they stand:
    the same code points and line starts as normalising every line apart."""
    lines = ["한국어 문장입니다", "", "다른 줄", "STRASSE 끝"]
    lines.insert(first, unicodedata.normalize("NFD", "한글 ßig Ǆ") + " 뒤")
    lines.append(unicodedata.normalize("NFD", "마지막 줄"))
    text = "\n".join(lines)
    points, starts = line_codepoints(text, "klue")
    expected_points, expected_starts = codepoints(lines, "klue")
    assert points.tolist() == expected_points.tolist() and starts.tolist() == expected_starts.tolist()
    hasher = Hasher(Settings("eojeol", 2, "klue"))
    by_line, apart = hasher.line_ngrams(text), hasher.ngrams(lines)
    assert by_line.hashes.tolist() == apart.hashes.tolist() and by_line.text.tolist() == apart.text.tolist()


def test_settings_checked_with_the_option_named() -> None:
    assert Settings.of("char", None, "klue").n == 25 and Settings.of("word", None, "gpt3").n == 13
    with pytest.raises(DataError, match="--unit"):
        Settings.of("morpheme", None, "klue")
    with pytest.raises(DataError, match="--normalise"):
        Settings.of("eojeol", None, "nfkc")
    with pytest.raises(DataError, match="--n"):
        Settings.of("eojeol", 0, "klue")
