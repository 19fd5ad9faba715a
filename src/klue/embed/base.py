"""What an embedding backend is: texts in, one vector per text out, in order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from klue.errors import DataError
from klue.io.endpoints import EMBED_BATCH_SIZE, ServerOptions


class EmbeddingError(DataError):
    """A backend could not embed (a server that refuses or fails, a model directory that cannot load)."""


class EmbeddingBackend(Protocol):
    name: str  # "local" (in process) or "openai" (HTTP)
    # What the vectors depend on besides the text and the prompt: a change gives new cache keys.
    fingerprint: str
    notes: list[str]  # what the backend found worth saying (the model's own prompts, a renamed model)

    def embed(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        """(len(texts), dim) float32, row i for texts[i]; `prompt` goes before every text."""
        ...

    def close(self) -> None: ...


def as_matrix(vectors: object, n: int, where: str) -> np.ndarray:
    """`vectors` as a finite (n, dim) float32 matrix; EmbeddingError saying what is wrong otherwise."""
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise EmbeddingError(f"{where}: the embeddings are not numbers ({error})") from None
    if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] == 0:
        raise EmbeddingError(f"{where}: expected {n} vectors, got an array of shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise EmbeddingError(f"{where}: {int(np.sum(~np.isfinite(matrix).all(axis=1)))} embeddings hold NaN or "
                             "infinite values")
    return matrix


@dataclass(frozen=True)
class EmbedBackendOptions:
    """How an embedding backend opens (`open_backend` of a kind's module, klue.embed.spec)."""

    server: ServerOptions = field(default_factory=lambda: ServerOptions(batch_size=EMBED_BATCH_SIZE))
    pooling: str | None = None  # in-process plain encoders: mean (default), cls or last
    max_length: int | None = None  # tokens per text (in process); None: the model's own limit


@dataclass(frozen=True)
class EmbedSettings:
    """How an embedding run goes (klue.embed.run), the backend aside."""

    prompt: str | None = None  # None: the model's own (a sentence-transformers default), else none
    limit: int | None = None  # the first N evaluation examples only (a partial run, never ranked)
    progress: bool = True
