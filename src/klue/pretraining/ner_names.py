"""Person names from a fine-tuned KLUE-NER model (`klue train --task ner`), for `klue pretrain pii --ner-model`.

The model tags characters; each maximal B-PS I-PS* run is a name. Texts are predicted in batches, so the
finder keeps a small cache: `PiiDetector` asks for one text at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def person_spans(text: str, tags: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of each PS entity in a per-character tag sequence (strict IOB2, spaces never inside)."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for index, tag in enumerate([*tags, "O"]):
        continues = tag == "I-PS" and start is not None
        if start is not None and not continues:
            end = index
            while end > start and text[end - 1].isspace():
                end -= 1
            spans.append((start, end))
            start = None
        if tag == "B-PS":
            start = index
    return spans


class NerNameFinder:
    """A `NameFinder` backed by the fine-tuned NER model in `model_dir`; `prefetch(texts)` predicts many
    texts in one pass (the model is loaded once per call), later lookups hit the cache."""

    def __init__(self, model_dir: Path, cpu: bool = False) -> None:
        self.model_dir = Path(model_dir)
        self.cpu = cpu
        self._cache: dict[str, list[tuple[int, int]]] = {}

    def prefetch(self, texts: Sequence[str]) -> None:
        from klue import registry
        from klue.tasks.ner import NerRecord
        from klue.training.run import predict

        wanted = set(texts)
        self._cache = {t: v for t, v in self._cache.items() if t in wanted}  # keep one chunk's worth
        todo = sorted({t for t in texts if t.strip() and t not in self._cache})
        if not todo:
            return
        records = [NerRecord(guid=f"pii-{i}", marked=t, chars=tuple(t), tags=("O",) * len(t))
                   for i, t in enumerate(todo)]
        for text, prediction in zip(todo, predict(registry.get("ner"), self.model_dir, records, cpu=self.cpu),
                                    strict=True):
            tags = list(prediction.tags)
            if len(tags) != len(text):  # one tag per non-space character: put the spaces back as O
                it = iter(tags)
                tags = ["O" if ch == " " else next(it, "O") for ch in text]
            self._cache[text] = person_spans(text, tags)

    def __call__(self, text: str) -> list[tuple[int, int]]:
        if not text.strip():
            return []
        if text not in self._cache:
            self.prefetch([text])
        return self._cache[text]


def ner_name_finder(model_dir: Path, cpu: bool = False) -> NerNameFinder:
    return NerNameFinder(model_dir, cpu)
