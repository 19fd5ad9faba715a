"""`--unit word --n 13 --normalise gpt3` against lm-evaluation-harness's own janitor functions, where they are
installed (`pip install --no-deps --target /tmp/lmeval lm-eval==0.4.9`, or KLUE_LMEVAL_DIR); skipped otherwise.
benchmarks/contamination_janitor.py is the full comparison on the real dev sets."""

from __future__ import annotations

import importlib.util
import os
import random
from pathlib import Path
from typing import Any

import pytest
from scan_helpers import ARTICLE, NOISE, OTHER, SECOND, scan, write_jsonl

from klue.contamination.index import Example
from klue.contamination.units import Settings

JANITOR = Path(os.environ.get("KLUE_LMEVAL_DIR", "/tmp/lmeval")) / "lm_eval" / "decontamination" / "janitor.py"


@pytest.fixture(scope="module")
def janitor() -> Any:
    if not JANITOR.is_file():
        pytest.skip(f"lm-evaluation-harness's janitor is not installed at {JANITOR}")
    spec = importlib.util.spec_from_file_location("lm_eval_janitor", JANITOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # lm_eval's package __init__ needs its dependencies; the janitor does not
    return module


def test_gpt3_method_flags_what_the_janitor_flags(janitor: Any, tmp_path: Path) -> None:
    rng = random.Random(7)
    base = [ARTICLE, SECOND, OTHER, *NOISE]
    words = " ".join(base).split()
    # texts of 13-20 words drawn from the sentences, with ASCII case, ASCII and Korean punctuation varied
    texts = [" ".join(rng.sample(words, rng.randint(13, 20))) for _ in range(30)]
    texts += [ARTICLE + " " + SECOND, "The QUICK brown fox, jumps over the lazy dog! " * 2, f"{OTHER} — {ARTICLE}"]
    corpus_docs = [*NOISE, f"머리말 {texts[3].upper()}!", texts[10].replace(" ", ", ", 2), "the quick brown fox "
                   "jumps over the lazy dog " * 2, f"{ARTICLE}{SECOND}", texts[20].replace(" ", "·", 1)]
    examples = [Example("nli", str(i), (t,), ()) for i, t in enumerate(texts)]
    result = scan([write_jsonl(tmp_path / "c.jsonl", corpus_docs)], Settings("word", 13, "gpt3"), examples)
    cleaner = janitor.Janitor(ngram_n=13)
    grams = {g for doc in corpus_docs for g in janitor.word_ngrams(cleaner.normalize_string(doc), 13)}
    theirs = [{i for i, g in enumerate(janitor.word_ngrams(cleaner.normalize_string(t), 13)) if g in grams}
              for t in texts]
    ours = [result.findings[i].positions.get(0, set()) if i in result.findings else set() for i in range(len(texts))]
    assert ours == theirs
    assert 3 <= sum(map(bool, theirs)) < len(texts)  # some dirty, some clean: the comparison can fail
