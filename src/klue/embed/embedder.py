"""Texts -> unit vectors through a backend and the cache: each distinct text is embedded once, by the cache
when it holds it, else by the model, chunk by chunk (the cache advances with every chunk, so an interrupted
run keeps what it had done), with a progress bar (texts, texts/s, ETA) on stderr.

Vectors are L2-normalised on the way out: cosine similarity is then a dot product, and a server that
normalises and a model that does not give the same features to the classifiers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from klue.embed.base import EmbeddingBackend, EmbeddingError
from klue.embed.cache import EmbeddingCache, embedding_key
from klue.io.progress import ProgressBar

CHUNK = 256  # texts per backend call: how often the cache and the progress bar advance


@dataclass
class EmbedStats:
    """What embedding cost: texts asked for (distinct), answered by the cache, embedded by the model."""

    texts: int = 0
    cache_hits: int = 0
    embedded: int = 0
    seconds: float = 0.0  # time spent in the backend

    @property
    def texts_per_s(self) -> float | None:
        return self.embedded / self.seconds if self.embedded and self.seconds > 0 else None


class Embedder:
    """A backend, a cache and the prompt: `embed(texts)` gives one unit vector per text, in order."""

    def __init__(self, backend: EmbeddingBackend, cache: EmbeddingCache, prompt: str | None = None, *,
                 progress: bool = True, chunk: int = CHUNK) -> None:
        self.backend = backend
        self.cache = cache
        # --prompt when given; else the model's own (a sentence-transformers model's default), else none
        self.prompt = prompt if prompt is not None else (getattr(backend, "default_prompt", None) or "")
        self.progress = progress
        self.chunk = max(1, chunk)
        self.stats = EmbedStats()
        self.dimension: int | None = None

    def embed(self, texts: Sequence[str], what: str = "texts") -> np.ndarray:
        """(len(texts), dim) float32 unit vectors; `what` names the texts on the progress bar."""
        distinct = list(dict.fromkeys(texts))
        keys = [embedding_key(self.backend.fingerprint, self.prompt, t) for t in distinct]
        found = self.cache.get_many(keys)
        missing = [i for i, key in enumerate(keys) if key not in found]
        self.stats.texts += len(distinct)
        self.stats.cache_hits += len(distinct) - len(missing)
        bar = ProgressBar(f"embedding {what}", len(missing), enabled=self.progress and bool(missing))
        try:
            for start in range(0, len(missing), self.chunk):
                part = missing[start:start + self.chunk]
                began = time.perf_counter()
                vectors = self.backend.embed([distinct[i] for i in part], self.prompt)
                self.stats.seconds += time.perf_counter() - began
                self.stats.embedded += len(part)
                self.cache.put_many([keys[i] for i in part], vectors)
                found.update((keys[i], v) for i, v in zip(part, vectors))
                bar.update(advance=len(part), info=f"{self.stats.texts_per_s or 0:,.0f} texts/s")
        finally:
            bar.close()
        if not distinct:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        matrix = self._stack([found[k] for k in keys])
        row_of = {text: i for i, text in enumerate(distinct)}
        return matrix[[row_of[t] for t in texts]]

    def _stack(self, vectors: list[np.ndarray]) -> np.ndarray:
        sizes = {len(v) for v in vectors} | ({self.dimension} if self.dimension is not None else set())
        if len(sizes) != 1:
            raise EmbeddingError(f"vectors of {' and '.join(map(str, sorted(sizes)))} dimensions from one model: did "
                                 "another model answer under this name (the cache keys on it)?")
        self.dimension = sizes.pop()
        matrix = np.stack(vectors).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if np.any(norms == 0):
            raise EmbeddingError(f"the model gave {int(np.sum(norms == 0))} all-zero vectors, which have no "
                                 "direction to compare")
        return matrix / norms
