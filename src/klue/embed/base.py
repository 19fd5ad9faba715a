"""What an embedding backend is: texts in, one vector per text out, in order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from klue.errors import DataError


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
