"""An embedding backend in the test process for the embedding tests (not a test module); the fake
OpenAI-compatible server, embeddings included, is tests/fake_openai.py."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fake_openai import toy_vector

__all__ = ["ToyBackend", "toy_vector"]


class ToyBackend:
    """An `EmbeddingBackend` in this process: `toy_vector` of prompt + text, counting what it is asked."""

    name = "toy"
    default_prompt: str | None = None

    def __init__(self, fingerprint: str = "toy-1", dim: int = 16) -> None:
        self.fingerprint = fingerprint
        self.dim = dim
        self.notes: list[str] = []
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        self.asked += [prompt + t for t in texts]
        return np.stack([toy_vector(prompt + t, self.dim) for t in texts]) if texts else np.zeros((0, self.dim))

    def close(self) -> None:
        pass


def open_backend(spec: object, options: object) -> ToyBackend:
    """This module as an embedding backend kind's (klue.embed.spec.KINDS): `emb:toy:NAME`, a ToyBackend whose
    fingerprint is NAME."""
    from klue.embed.spec import EmbeddingSpec

    assert isinstance(spec, EmbeddingSpec)
    return ToyBackend(fingerprint=spec.model)
