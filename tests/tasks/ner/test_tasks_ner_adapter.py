"""NER alignment: gold character tags -> sub-word labels -> character tags, on the real dev file, for a
WordPiece, a byte-level BPE and a Unigram tokenizer; windows over long sentences decode like one pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.errors import ProblemLog
from klue.models.features import FeaturizeContext
from klue.tasks.ner.adapter import char_owners, keep_ranges, window_starts

# Vocabulary sizes where these tokenizers still mostly keep entity boundaries between tokens; larger
# vocabularies without morpheme-aware pre-tokenization merge entities with particles (seen when these sizes were chosen; no benchmark records it).
TOKENIZERS = [("bert", "wordpiece", 2500), ("roberta", "bpe", 1500), ("bert", "unigram", 3000)]


def read(task: Any, path: Path) -> list[Any]:
    log = ProblemLog(str(path))
    records = task.read(path, log)
    log.raise_if_errors()
    return records


@pytest.fixture(scope="module")
def ner_data(klue_data_dir: Path, shared_data_dir: Path) -> tuple[list[Any], list[str]]:
    task = registry.get("ner")
    dev = read(task, klue_data_dir / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv")
    train = read(task, shared_data_dir / "klue-partial" / "klue-ner-v1.1" / "klue-ner-v1.1_train.first5000.tsv")
    return dev, [r.text for r in train[:2000]]


def test_char_owners_gives_each_character_to_the_first_covering_token() -> None:
    text = "박씨 는"
    # token 0 covers "박", tokens 1 and 2 both cover "씨" (byte pieces), token 3 covers " 는" (with the space)
    owned = char_owners(text, [(0, 1), (1, 2), (1, 2), (2, 4)])
    assert owned == [(0,), (1,), (), (3,)]


def test_windows_cover_every_token_once() -> None:
    for n in (1, 5, 10, 11, 37, 100):
        starts = window_starts(n, 10, 3)
        kept = []
        for start, (lo, hi) in zip(starts, keep_ranges(n, 10, starts)):
            assert start + 10 >= start + hi and lo <= hi
            kept.extend(range(start + lo, start + hi))
        assert kept == list(range(n))


@pytest.mark.realdata
@pytest.mark.parametrize(("arch", "kind", "vocab_size"), TOKENIZERS)
@pytest.mark.slow
def test_alignment_round_trip_ceiling(arch: str, kind: str, vocab_size: int,
                                      ner_data: tuple[list[Any], list[str]]) -> None:
    from klue.models.tiny import train_tokenizer

    dev, texts = ner_data
    task = registry.get("ner")
    adapter = task.make_adapter()
    tokenizer = train_tokenizer(texts, arch, kind, vocab_size=vocab_size)  # type: ignore[arg-type]
    full = adapter.roundtrip(dev, FeaturizeContext(tokenizer, 512, False, 128))
    scores = task.evaluate(dev, full, "official").scores
    print(f"{kind} (vocab {len(tokenizer)}): entity F1 ceiling {scores['entity_macro_f1']:.2f}, "
          f"character F1 ceiling {scores['character_macro_f1']:.2f}")
    assert scores["entity_macro_f1"] >= 95.0
    assert all(len(p.tags) == len(r.text) for p, r in zip(full, dev))
    # Windows of 24 tokens (most sentences are longer) decode exactly like whole sentences.
    windowed = adapter.roundtrip(dev[:300], FeaturizeContext(tokenizer, 24, False, 6))
    assert [p.tags for p in windowed] == [p.tags for p in full[:300]]


@pytest.mark.realdata
@pytest.mark.slow
def test_character_level_alignment_is_exact(ner_data: tuple[list[Any], list[str]]) -> None:
    """With one token per character (a vocabulary of single characters) nothing is lost, except where
    WordPiece maps a word with an unseen character to [UNK] as a whole."""
    from klue.models.tiny import train_tokenizer

    dev, _ = ner_data
    task = registry.get("ner")
    tokenizer = train_tokenizer([r.text for r in dev], "roberta", "bpe", vocab_size=300)  # bytes only
    predictions = task.make_adapter().roundtrip(dev, FeaturizeContext(tokenizer, 512, False, 128))
    for record, prediction in zip(dev, predictions):
        assert [t for c, t in zip(record.chars, prediction.tags) if c != " "] == list(record.nonspace_tags)
