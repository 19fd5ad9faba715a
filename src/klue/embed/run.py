"""The sentence-embedding producer: one task, one model spec, one seed -> predictions.jsonl and the judge's
results.json (the same scoring path as `klue score`).

The task's declaration (`klue.tasks.embedding`) says which texts of a record to embed and how a prediction is
made. The model is fitted on the protocol's TRAINING part only (a logistic regression, or the calibration of
cosine similarity to the score scale) and predicts the evaluation part; nothing is fitted on what is scored.
Every text goes through the embedding cache, so a rerun, another seed or another task that shares texts asks
the model only for what is missing.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from klue.embed.base import EmbeddingBackend, EmbedSettings
from klue.embed.cache import CACHE_FILE, EmbeddingCache
from klue.embed.embedder import Embedder
from klue.embed.frozen import (
    cosines,
    fit_calibration,
    fit_labels,
    pair_features,
    spearman,
)
from klue.errors import DataError
from klue.io.redact import redact_text
from klue.predictions import write_predictions
from klue.results import EMBEDDING, PREDICTIONS_FILE, EmbeddingSummary, Results
from klue.scoring import ProducerReport, RunRequest
from klue.tasks.base import Task
from klue.tasks.embedding import Classification, EmbeddingUse, Similarity


def run(request: RunRequest, backend: EmbeddingBackend, settings: EmbedSettings | None = None, *,
        cache_path: Path | None = None) -> Results:
    """Evaluate the embedding model `backend` (named `request.model_spec`) on `request.task`; see the module
    docstring. The cache is `cache_path` (default: out_dir/embedding_cache.sqlite)."""
    task, spec_text, data, seed, out_dir = (request.task, request.model_spec, request.protocol_data, request.seed,
                                            Path(request.out_dir))
    settings = settings or EmbedSettings()
    started = time.perf_counter()
    spec_text = redact_text(spec_text)  # the model's name in every output from here: no URL credentials
    use: EmbeddingUse = task.make_embedding()
    evaluated = list(data.eval)[:settings.limit] if settings.limit is not None else list(data.eval)
    if not data.train:
        raise DataError(f"{task.name}: protocol {data.protocol!r} gives no training records to fit on")
    if not evaluated:
        raise DataError(f"{task.name}: nothing to evaluate (the protocol's evaluation part is empty)")
    partial = settings.limit is not None and len(evaluated) < len(data.eval)
    cache = EmbeddingCache(cache_path or Path(out_dir) / CACHE_FILE)
    try:
        embedder = Embedder(backend, cache, settings.prompt, progress=settings.progress)
        fit_start = time.perf_counter()
        train_inputs = _inputs(use, data.train, embedder, task.name, "training")
        eval_inputs = _inputs(use, evaluated, embedder, task.name, "evaluation")
        if isinstance(use, Similarity):
            predictions, head, extra = _similarity(use, data.train, evaluated, train_inputs, eval_inputs, seed)
        else:
            predictions, head, extra = _classification(use, task, data.train, evaluated, train_inputs, eval_inputs,
                                                       seed)
        fit_time = time.perf_counter() - fit_start
    finally:
        cache.close()

    eval_part = replace(data, eval=evaluated, description=data.description + (
        f"; the first {len(evaluated):,} of {len(data.eval):,} evaluation examples only (--limit): a partial "
        "score, never ranked" if partial else ""))
    write_predictions(Path(out_dir) / PREDICTIONS_FILE, task, evaluated, predictions, f"embedding {spec_text!r}")
    stats = embedder.stats
    summary = EmbeddingSummary(
        backend=backend.name, model_fingerprint=backend.fingerprint, prompt=embedder.prompt,
        pooling=getattr(backend, "pooling", None), dimension=int(embedder.dimension or 0), use=use.kind,
        inputs=use.inputs, head=head, texts=stats.texts, cache_hits=stats.cache_hits, embedded=stats.embedded,
        embed_seconds=round(stats.seconds, 3), texts_per_s=stats.texts_per_s, limit=settings.limit,
        notes=list(backend.notes), **extra)
    producer = ProducerReport(
        model=spec_text, model_family=EMBEDDING, seed=seed, started=started, recipe=f"frozen embeddings: {head}",
        hyperparameters={"prompt": embedder.prompt, "pooling": summary.pooling, "seed": seed, "limit": settings.limit,
                         "head": head},
        train_time_s=fit_time, eval_examples_per_s=None, partial=partial, embedding=summary)
    return request.judge(eval_part, producer)


def _inputs(use: EmbeddingUse, records: list[Any], embedder: Embedder, task_name: str,
            part: str) -> list[np.ndarray]:
    """One matrix per text slot of the records (one, or two for a pair), rows in record order."""
    texts = [tuple(use.texts(r)) for r in records]
    wrong = [i for i, t in enumerate(texts) if len(t) != use.n_texts or not all(isinstance(x, str) for x in t)]
    if wrong:
        raise DataError(f"{task_name}: the embedding declaration gives {len(texts[wrong[0]])} texts for record "
                        f"{wrong[0]} of the {part} part, where it declares {use.n_texts}")
    flat = [text for group in texts for text in group]
    matrix = embedder.embed(flat, f"{task_name} {part} ({len(records):,} examples)")
    return [matrix[slot::use.n_texts] for slot in range(use.n_texts)]


def _features(inputs: list[np.ndarray]) -> np.ndarray:
    return inputs[0] if len(inputs) == 1 else pair_features(inputs[0], inputs[1])


def _classification(use: Classification, task: Task[Any, Any], train: list[Any], evaluated: list[Any],
                    train_inputs: list[np.ndarray], eval_inputs: list[np.ndarray],
                    seed: int) -> tuple[list[Any], str, dict[str, Any]]:
    model = fit_labels(_features(train_inputs), [use.gold(r) for r in train], task.labels, seed)
    probabilities = model.probabilities(_features(eval_inputs))
    labels = task.labels
    predictions = [use.predict(record, labels[int(np.argmax(row))], dict(zip(labels, map(float, row))))
                   for record, row in zip(evaluated, probabilities)]
    features = "the pair features u, v, |u - v|, u * v" if use.n_texts == 2 else "the embedding"
    return predictions, model.describe(features), {}


def _similarity(use: Similarity, train: list[Any], evaluated: list[Any], train_inputs: list[np.ndarray],
                eval_inputs: list[np.ndarray], seed: int) -> tuple[list[Any], str, dict[str, Any]]:
    calibration = fit_calibration(cosines(*train_inputs), [use.gold(r) for r in train], use.scale, use.cut)
    cosine = cosines(*eval_inputs)
    scores = calibration(cosine)
    predictions = [use.predict(record, float(score)) for record, score in zip(evaluated, scores)]
    rho = spearman(cosine, [use.gold(r) for r in evaluated], seed)
    extra = {"calibration": {"slope": calibration.slope, "threshold": calibration.threshold,
                             "anchor": calibration.anchor, "low": calibration.low, "high": calibration.high},
             "cosine_spearman": _finite(rho.value),
             "cosine_spearman_interval": None if np.isnan([rho.low, rho.high]).any() else [rho.low, rho.high]}
    return predictions, f"cosine similarity; {calibration.describe()}", extra


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None  # JSON has no NaN: an undefined correlation is null
