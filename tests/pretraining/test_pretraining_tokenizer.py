"""Tokenizer training: exact offsets for every algorithm x pre-tokenization, AutoTokenizer loading, specials."""

from __future__ import annotations

import itertools
import unicodedata
from pathlib import Path

import pytest

from klue.pretraining.morphemes import MorphemeSplitter, cut_points
from klue.pretraining.tokenizer import (
    ALGORITHMS,
    PRETOKENIZE,
    TokenizerSpec,
    boundary_agreement,
    check_offsets,
    save_tokenizer,
    train_tokenizer,
)

SENTENCES = [
    "그는 서울에서 학교를 다녔다.", "삼성전자(주)는 2021년 3월에 신제품을 발표했다!", "했다고 말했어요, 정말로?",
    "안전모를 쓴 한 남자가 춤을 추고 있다.", "여자가 기타를 치면서 노래를 부르고 있습니다.",
    "오늘 날씨는 맑고 기온은 영상 12도입니다.", "\"왜요?\" 하고 그녀가 물었다.", "이메일 test@example.com 으로 보내 주세요 😀",
]


@pytest.fixture(scope="module")
def splitter() -> MorphemeSplitter:
    return MorphemeSplitter()


@pytest.fixture(scope="module")
def real_sentences(shared_data_dir: Path) -> tuple[list[str], list[str]]:
    """KorSTS train sentences to train on, KorSTS dev sentences to check (real, unseen text)."""
    def column(path: Path, index: int, n: int) -> list[str]:
        rows = path.read_text(encoding="utf-8").splitlines()[1:n + 1]
        return [r.split("\t")[index] for r in rows]

    korsts = shared_data_dir / "korean" / "korsts"
    return column(korsts / "sts-train.tsv", 5, 600) + SENTENCES, column(korsts / "sts-dev.tsv", 6, 150)


def test_cut_points_follow_surface_not_contractions() -> None:
    # 다니 covers "다녔", 었 covers "녔": the cut inside a morpheme's span is not a surface cut.
    assert cut_points("다녔다", [(0, 2), (1, 2), (2, 3)]) == [2]
    assert cut_points("학교에서 공부", [(0, 2), (2, 4), (5, 7)]) == [2]  # never at a space


def test_kiwi_segments_are_substrings(splitter: MorphemeSplitter) -> None:
    for text in SENTENCES:
        pieces = [text[s:e] for s, e in splitter.segments(text)]
        assert "".join(pieces) == "".join(text.split())
    assert [t for t in (SENTENCES[0][s:e] for s, e in splitter.segments(SENTENCES[0]))][:4] == ["그", "는", "서울", "에서"]


@pytest.mark.realdata
@pytest.mark.parametrize(("algorithm", "pretokenize"), list(itertools.product(ALGORITHMS, PRETOKENIZE)))
def test_offsets_round_trip_on_real_sentences(algorithm: str, pretokenize: str, splitter: MorphemeSplitter,
                                              real_sentences: tuple[list[str], list[str]]) -> None:
    train, check = real_sentences
    spec = TokenizerSpec(algorithm, pretokenize, vocab_size=2500, min_frequency=1)  # type: ignore[arg-type]
    tokenizer = train_tokenizer(train, spec, splitter)
    assert len(tokenizer) <= 2500
    for text in [*check, *SENTENCES]:
        result = check_offsets(tokenizer, text, spec)
        assert result.exact, (text, result)
    # decomposed (NFD) input: offsets still point into the text as given, covering whole syllables
    nfd = unicodedata.normalize("NFD", check[0])
    offsets = tokenizer(nfd, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    assert offsets[-1][1] == len(nfd.rstrip())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(offsets))


@pytest.mark.realdata
def test_morpheme_vocabulary_lands_on_kiwi_boundaries(splitter: MorphemeSplitter,
                                                      real_sentences: tuple[list[str], list[str]]) -> None:
    """Without Kiwi at inference, the morpheme-trained tokenizer still cuts where Kiwi cuts; the
    whitespace-trained one does not (measured: recall about 98 vs 15 with 5,000 sentences)."""
    train, check = real_sentences
    agreement = {}
    for pretokenize in ("morpheme", "whitespace"):
        spec = TokenizerSpec("wordpiece", pretokenize, vocab_size=3000, min_frequency=1)  # type: ignore[arg-type]
        agreement[pretokenize] = boundary_agreement(train_tokenizer(train, spec, splitter), check[:60], splitter)
    assert agreement["morpheme"].recall > 90
    assert agreement["morpheme"].recall > agreement["whitespace"].recall + 20


@pytest.mark.parametrize("style", ["bert", "roberta"])
def test_saved_tokenizer_loads_with_autotokenizer(style: str, tmp_path: Path, splitter: MorphemeSplitter) -> None:
    from transformers import AutoTokenizer

    spec = TokenizerSpec("wordpiece", "morpheme", vocab_size=400, style=style, min_frequency=1)  # type: ignore[arg-type]
    tokenizer = train_tokenizer(SENTENCES * 3, spec, splitter)
    out = save_tokenizer(tokenizer, spec, tmp_path / "tok")
    loaded = AutoTokenizer.from_pretrained(str(out))
    assert loaded.is_fast
    text = SENTENCES[0]
    assert loaded(text)["input_ids"] == tokenizer(text)["input_ids"]
    pair = loaded(text, SENTENCES[1])
    tokens = loaded.convert_ids_to_tokens(pair["input_ids"])
    if style == "bert":
        assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2 and "token_type_ids" in pair
        assert set(pair["token_type_ids"]) == {0, 1}
        assert loaded.convert_tokens_to_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]) == [0, 1, 2, 3, 4]
    else:
        assert tokens[0] == "<s>" and tokens.count("</s>") == 3 and "token_type_ids" not in pair
        assert loaded.convert_tokens_to_ids(["<s>", "<pad>", "</s>", "<unk>", "<mask>"]) == [0, 1, 2, 3, 4]
    assert loaded.mask_token is not None and loaded.pad_token_id is not None
    assert check_offsets(loaded, text, spec).exact


def test_bad_spec_is_a_data_error() -> None:
    from klue.errors import DataError

    with pytest.raises(DataError, match="algorithm"):
        TokenizerSpec("sentencepiece")  # type: ignore[arg-type]


_TRAIN_AND_HASH = """
import hashlib, sys
from klue.pretraining.tokenizer import TokenizerSpec, train_tokenizer
texts = [line for line in open(sys.argv[1], encoding="utf-8").read().splitlines() if line]
for algorithm in sys.argv[2:]:
    spec = TokenizerSpec(algorithm, "whitespace", 1500, "bert", min_frequency=1)
    print(algorithm, hashlib.sha1(train_tokenizer(texts, spec).backend_tokenizer.to_str().encode()).hexdigest())
"""
REPRODUCED = ("wordpiece", "bpe")


@pytest.fixture(scope="module")
def hashes_in_three_processes(real_sentences: tuple[list[str], list[str]],
                              tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Each algorithm's trained tokenizer hashed in three fresh processes; each process trains every
    algorithm of `REPRODUCED` (a process costs about 2 CPU s of imports: three, not three per algorithm)."""
    import subprocess
    import sys

    corpus = tmp_path_factory.mktemp("reproducible") / "corpus.txt"
    corpus.write_text("\n".join(real_sentences[0]), encoding="utf-8")
    hashes: dict[str, set[str]] = {algorithm: set() for algorithm in REPRODUCED}
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", _TRAIN_AND_HASH, str(corpus), *REPRODUCED],
                              capture_output=True, text=True, check=True)
        for line in done.stdout.splitlines():
            algorithm, digest = line.split()
            hashes[algorithm].add(digest)
    return hashes


@pytest.mark.realdata
@pytest.mark.parametrize("algorithm", REPRODUCED)
@pytest.mark.slow
def test_training_is_reproducible_across_processes(algorithm: str,
                                                   hashes_in_three_processes: dict[str, set[str]]) -> None:
    # The `##` trainers of `tokenizers` give continuation pieces hash-map-order ids; the twin characters
    # make the result the same in every process (a fresh process gets a fresh hash seed).
    hashes = hashes_in_three_processes[algorithm]
    assert len(hashes) == 1, hashes
