"""The scan on small synthetic corpora: what is dirty, the longest match, the covered share, where the first
match is, with the answer or not; re-spaced and NFD copies."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from scan_helpers import ARTICLE, EXAMPLES, OTHER, SECOND, SHORT, corpus_lines, dirty, scan, write_jsonl

from klue.contamination.index import Example, build_index
from klue.contamination.run import covered_share, example_json
from klue.contamination.units import Settings


def test_a_copied_sentence_is_dirty_and_the_rest_clean(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", corpus_lines(f"기사 원문: {ARTICLE} 이상입니다."))
    result = scan([corpus])
    assert dirty(result) == {"ex-article": True, "ex-second": False, "ex-other": False, "ex-short": False}
    found = result.findings[0]
    assert found.longest == len(ARTICLE.split()) and found.first_at.line == 3
    assert found.first_at.offset == len((corpus.read_text(encoding="utf-8").split("\n", 2)[0] + "\n").encode()) + \
        len((corpus.read_text(encoding="utf-8").split("\n")[1] + "\n").encode())
    assert found.with_answer_at is None  # the corpus holds the premise, not the short hypothesis and label


def test_longest_match_and_covered_share_of_a_partial_copy(tmp_path: Path) -> None:
    words = ARTICLE.split()
    corpus = write_jsonl(tmp_path / "c.jsonl", corpus_lines(" ".join(words[:9]) + " 그리고 다른 이야기"))
    index = build_index(EXAMPLES, Settings())
    result = scan([corpus])
    found = result.findings[0]
    assert found.longest == 9 and index.text_of(0, found.longest_from, found.longest) == " ".join(words[:9])
    total = len(words) + len(SHORT.split()) + 1  # "다." splits: punctuation is a break
    assert covered_share(index, 0, found) == 9 / index.input_units(0) and index.input_units(0) >= total - 1
    row = example_json(index, 0, found)
    assert row["dirty_input"] and not row["dirty_with_answer"] and row["first_match"]["line"] == 3


def test_a_document_with_the_whole_input_and_the_answer(tmp_path: Path) -> None:
    dump = f'{{"premise": "{SECOND}", "hypothesis": "{SHORT}", "label": "neutral"}}'
    corpus = tmp_path / "dump.txt"
    corpus.write_text("\n".join(corpus_lines(dump, f"{SECOND} entailment")) + "\n", encoding="utf-8")
    result = scan([corpus])
    found = result.findings[1]
    assert found.with_answer_at is not None and found.with_answer_at.line == 3
    assert found.first_at.line == 3 and found.first_at.offset is not None


def test_the_answer_alone_beside_the_input_is_not_enough(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [f"{SECOND} neutral"])  # no hypothesis in the document
    assert scan([corpus]).findings[1].with_answer_at is None


def test_a_respaced_copy_matches_by_characters_not_by_eojeols(tmp_path: Path) -> None:
    respaced = ARTICLE.replace(" ", "").replace("시내버스노선", "시내 버스 노선")
    corpus = write_jsonl(tmp_path / "c.jsonl", corpus_lines(respaced))
    assert not dirty(scan([corpus]))["ex-article"]
    chars = scan([corpus], Settings("char", 25, "klue"))
    assert dirty(chars) == {"ex-article": True, "ex-second": False, "ex-other": False, "ex-short": False}
    assert chars.findings[0].longest == len(ARTICLE.replace(" ", "").rstrip("."))


def test_an_nfd_copy_matches_an_nfc_example(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", OTHER.upper())
    assert nfd != OTHER
    corpus = write_jsonl(tmp_path / "c.jsonl", corpus_lines(nfd))
    assert dirty(scan([corpus]))["ex-other"]
    # the GPT-3 normalisation does no NFC: the decomposed copy is other text
    assert not dirty(scan([corpus], Settings("eojeol", 8, "gpt3")))["ex-other"]


def test_a_match_never_spans_two_documents(tmp_path: Path) -> None:
    words = ARTICLE.split()
    assert len(words) < 16  # two halves shorter than 8 eojeols each
    corpus = write_jsonl(tmp_path / "c.jsonl", [" ".join(words[:7]), " ".join(words[7:])])
    assert not scan([corpus]).findings


def test_the_first_match_is_the_first_in_corpus_order(tmp_path: Path) -> None:
    one = write_jsonl(tmp_path / "a.jsonl", corpus_lines(ARTICLE))
    two = write_jsonl(tmp_path / "b.jsonl", [ARTICLE])
    found = scan([two, one]).findings[0]
    assert found.first_at.file == str(two) and found.first_at.line == 1


def test_examples_with_the_same_text_are_each_found(tmp_path: Path) -> None:
    twins = [Example("sts", "a", (ARTICLE,), ()), Example("sts", "b", (ARTICLE,), ())]
    corpus = write_jsonl(tmp_path / "c.jsonl", [ARTICLE])
    result = scan([corpus], examples=twins)
    assert set(result.findings) == {0, 1} and all(f.with_answer_at is not None for f in result.findings.values())
