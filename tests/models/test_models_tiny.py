"""Tiny tokenizers: offsets for every kind, the special-token template, reproducible WordPiece vocabularies."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from klue.models.features import SpecialTokens
from klue.models.tiny import train_tokenizer

TEXTS = ["경찰은 또 성매매 알선 자금을 관리한 박씨의 딸과 성매매 여성 김모씨 등을 입건했다.",
         "흡연자분들은 발코니가 있는 방이면 발코니에서 흡연이 가능합니다."] * 10


@pytest.mark.parametrize(("arch", "kind"), [("bert", "wordpiece"), ("roberta", "bpe"), ("bert", "unigram")])
def test_tokenizers_give_offsets_and_special_tokens(arch: str, kind: str) -> None:
    tokenizer = train_tokenizer(TEXTS, arch, kind, vocab_size=120)  # type: ignore[arg-type]
    text = TEXTS[1]
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    assert len(encoded["offset_mapping"]) == len(encoded["input_ids"])
    covered = {c for start, end in encoded["offset_mapping"] for c in range(start, end)}
    assert covered >= {i for i, c in enumerate(text) if c != " "}
    specials = SpecialTokens.of(tokenizer)
    assert specials.prefix == (tokenizer.cls_token_id,) and specials.suffix == (tokenizer.sep_token_id,)
    pair = tokenizer("가", "나", return_token_type_ids=True)
    assert set(pair["token_type_ids"]) == ({0, 1} if arch == "bert" else {0})


@pytest.mark.slow
def test_wordpiece_vocabulary_is_the_same_in_every_process() -> None:
    """This process and two others, each with its own string-hash seed (what differs between processes)."""
    code = ("import hashlib, json; from klue.models.tiny import train_tokenizer; "
            f"t = train_tokenizer({TEXTS!r} * 3, 'bert', 'wordpiece', vocab_size=150); "
            "print(hashlib.sha1(json.dumps(sorted(t.get_vocab().items())).encode()).hexdigest())")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    digests = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**env, "PYTHONHASHSEED": seed}).stdout.strip() for seed in ("1", "2")}
    here = train_tokenizer(TEXTS * 3, "bert", "wordpiece", vocab_size=150)
    digests.add(hashlib.sha1(json.dumps(sorted(here.get_vocab().items())).encode()).hexdigest())
    assert len(digests) == 1
