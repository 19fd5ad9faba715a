"""`klue.training.run`: fine-tune one encoder on one task under one protocol, and write its results.

Contract E: `run(task, model, protocol_data, seed, out_dir, overrides, mode="official") -> Results`.
The output directory receives:
    results.json        klue.reporting.schema.Results (scores from task.evaluate, provenance, curve)
    predictions.jsonl   SPEC section 3 objects for the evaluated split (from the best checkpoint)
    best/               the best model by the selection metric (`klue predict --model <out>/best`)
    checkpoints/        resumable state while the run is in progress (removed at the end by default)
Running the same command again after a crash resumes from the last checkpoint.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.metrics.report import MetricReport
from klue.provenance import git_revision, library_versions, utc_now
from klue.reporting.schema import Results, write_results
from klue.tasks.base import ProtocolData, Task
from klue.training import checkpoint, recipes
from klue.training.features import FeaturizeContext

PREDICTIONS_FILE = "predictions.jsonl"
RESULTS_FILE = "results.json"
DEFAULT_RECIPE = "paper"


def write_predictions(path: Path, task: Task[Any, Any], predictions: Sequence[Any]) -> None:
    """JSON Lines, one SPEC object per example, written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for prediction in predictions:
                handle.write(json.dumps(task.prediction_to_json(prediction), ensure_ascii=False))
                handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def usable_max_len(tokenizer: Any, config: Any) -> int:
    """The longest input the model takes: the position table, and the tokenizer's own limit when it sets
    one (RoBERTa-type configs have 2 more positions than usable, their tokenizer says 512)."""
    limits = [int(getattr(config, "max_position_embeddings", 0) or 0)]
    declared = getattr(tokenizer, "model_max_length", None)
    if isinstance(declared, int) and 0 < declared < 1_000_000:
        limits.append(declared)
    return min(x for x in limits if x > 0)


def confusion_json(report: MetricReport) -> dict[str, Any] | None:
    if report.confusion is None:
        return None
    return {"labels": list(report.confusion.labels), "counts": [list(row) for row in report.confusion.counts]}


def run(task: Task[Any, Any], model: str, protocol_data: ProtocolData[Any], seed: int, out_dir: Path,
        overrides: dict[str, Any], mode: str = "official", *, recipe: str | None = None,
        on_step: Callable[[int], None] | None = None) -> Results:
    """Fine-tune `model` (hub name or local directory) on `task`; see the module docstring.

    `overrides` are hyper-parameters (klue.training.recipes.Hyperparameters fields) and may name the
    recipe under "recipe" (default "paper"). `on_step` is called after every optimizer step (tests use
    it to interrupt a run)."""
    from accelerate.utils import set_seed

    from klue.models.loading import fit_embeddings, load_encoder, load_finetuned, uses_token_type_ids
    from klue.training.adapters import get_adapter
    from klue.training.engine import BEST_DIR, Engine, make_accelerator

    wall_start = time.perf_counter()
    model = str(model)
    out_dir = Path(out_dir)
    overrides = dict(overrides)
    recipe_name = recipe or str(overrides.pop("recipe", None) or DEFAULT_RECIPE)
    adapter = get_adapter(task)

    set_seed(seed, deterministic=bool(overrides.get("deterministic", False)))
    loaded = load_encoder(model)
    resolved = recipes.resolve(recipe_name, task.name, loaded.config, overrides)
    hp = resolved.hyperparameters
    limit = usable_max_len(loaded.tokenizer, loaded.config)
    if hp.max_len > limit:
        raise DataError(f"max_len={hp.max_len} exceeds what {model} accepts ({limit} tokens); "
                        f"override max_len={limit} or less")
    accelerator = make_accelerator(hp)
    adapter.attach_data(protocol_data)
    adapter.prepare(loaded.tokenizer, protocol_data.train)
    added_tokens = fit_embeddings(loaded.encoder, loaded.tokenizer)
    spec = adapter.head_spec(hp.dropout, hp.head_options)
    set_seed(seed)  # the head's initial weights depend on the seed only, not on how the encoder was loaded
    head_model = adapter.build_model(loaded.encoder, spec)
    ctx = FeaturizeContext(loaded.tokenizer, hp.max_len, uses_token_type_ids(loaded.config), hp.overlap)

    train_features = adapter.featurize(protocol_data.train, ctx)
    # Adapters count cut inputs per featurize call: read the training count before the next call resets it.
    truncated_train = getattr(adapter, "truncated", None)
    selection_records = protocol_data.selection if protocol_data.selection is not None else protocol_data.eval
    selection_features = adapter.featurize(selection_records, ctx)
    eval_features = (adapter.featurize(protocol_data.eval, ctx) if protocol_data.selection is not None
                     else selection_features)
    selection_metric = hp.selection_metric or task.key_metric
    selection_note = (f"held-out selection set ({len(protocol_data.selection)} examples); eval reported once "
                      "with the selected checkpoint" if protocol_data.selection is not None
                      else f"eval set ({len(protocol_data.eval)} examples), as the official recipe selects on dev")

    card = {"task": task.name, "task_version": task.version, "base_model": model, "head": spec.to_json(),
            "max_len": hp.max_len, "window_overlap": hp.overlap, "seed": seed,
            "recipe": resolved.name, "protocol": protocol_data.protocol}
    run_fingerprint = checkpoint.fingerprint({
        "task": task.name, "model": model, "protocol": protocol_data.protocol, "seed": seed, "mode": mode,
        "hyperparameters": {k: v for k, v in hp.to_json().items() if k not in ("resume", "progress")},
        "sources": [asdict(s) for s in protocol_data.sources], "n_train": len(protocol_data.train),
        "num_processes": accelerator.num_processes})

    engine = Engine(accelerator, head_model, adapter, ctx, hp)
    fit = engine.fit(train_features, selection_records, selection_features, seed, out_dir, mode, card,
                     run_fingerprint, selection_metric, on_step=on_step)

    # Report from the best checkpoint (the last one if no evaluation ever improved, which cannot happen:
    # the first evaluation always sets the best).
    best = load_finetuned(out_dir / BEST_DIR)
    best.load_weights_into(accelerator.unwrap_model(engine.model))
    predictions = engine.predict(protocol_data.eval, eval_features)
    report = task.evaluate(protocol_data.eval, predictions, mode)  # type: ignore[arg-type]
    if accelerator.is_main_process:
        write_predictions(out_dir / PREDICTIONS_FILE, task, predictions)

    state = fit.state
    hyperparameters = {
        **hp.to_json(),
        "selection_metric": selection_metric,
        "checkpoint_selection": selection_note,
        "best_step": state.best_step,
        "best_selection_score": state.best_score,
        "total_steps": fit.total_steps,
        "steps_per_epoch": fit.steps_per_epoch,
        "num_processes": accelerator.num_processes,
        "device": str(accelerator.device),
        "mixed_precision_used": accelerator.mixed_precision,
        "model_source": loaded.source,
        "num_parameters": sum(p.numel() for p in head_model.parameters()),
        "use_token_type_ids": ctx.use_token_type_ids,
        "added_tokens": added_tokens,
        "n_train_features": len(train_features),
        "n_eval_features": len(eval_features),
        "truncated_train_features": truncated_train,
        "resumed_from_steps": state.resumed_from,
        "overrides": resolved.overrides,
    }
    results = Results(
        task=task.name, task_version=task.version, model=model, model_family="encoder", seed=seed,
        protocol=protocol_data.protocol, protocol_official=protocol_data.official,
        protocol_description=protocol_data.description, metric_mode=mode,
        scores={k: float(v) for k, v in report.scores.items()}, breakdown=report.breakdown,
        confusion=confusion_json(report), n_train=len(protocol_data.train), n_eval=len(protocol_data.eval),
        data_sources=[asdict(s) for s in protocol_data.sources], recipe=resolved.name,
        hyperparameters=hyperparameters, learning_curve=state.learning_curve,
        wall_time_s=time.perf_counter() - wall_start, train_time_s=state.train_time_s,
        train_examples_per_s=state.examples_seen / state.train_time_s if state.train_time_s > 0 else None,
        eval_examples_per_s=engine.eval_examples_per_s, predictions_file=PREDICTIONS_FILE,
        library_versions=library_versions(), git_revision=git_revision(), created_at=utc_now())
    if accelerator.is_main_process:
        write_results(out_dir / RESULTS_FILE, results)
    if not hp.keep_checkpoints:
        checkpoint.remove_all(accelerator, out_dir)
    accelerator.wait_for_everyone()
    return results


def predict(task: Task[Any, Any], model_dir: Path, records: Sequence[Any], *, eval_batch_size: int = 64,
            cpu: bool = False, mixed_precision: str = "auto") -> list[Any]:
    """Predictions of a fine-tuned model directory (`<out>/best` of a run) for `records`."""
    from klue.models.loading import load_finetuned, uses_token_type_ids
    from klue.training.adapters import get_adapter
    from klue.training.engine import Engine, make_accelerator

    finetuned = load_finetuned(Path(model_dir))
    trained_for = finetuned.card.get("task")
    if trained_for != task.name:
        raise DataError(f"{model_dir} was fine-tuned for task {trained_for!r}, not {task.name!r}", model_dir)
    adapter = get_adapter(task)
    adapter.prepare(finetuned.tokenizer, None)  # the saved tokenizer already holds any added tokens
    model = adapter.build_model(finetuned.encoder, finetuned.head)
    finetuned.load_weights_into(model)
    hp = recipes.Hyperparameters(max_len=int(finetuned.card["max_len"]),
                                 window_overlap=int(finetuned.card["window_overlap"]),
                                 eval_batch_size=eval_batch_size, cpu=cpu, mixed_precision=mixed_precision,
                                 progress=False)
    accelerator = make_accelerator(hp)
    model = accelerator.prepare(model)
    ctx = FeaturizeContext(finetuned.tokenizer, hp.max_len, uses_token_type_ids(finetuned.encoder.config),
                           hp.overlap)
    engine = Engine(accelerator, model, adapter, ctx, hp)
    return engine.predict(records, adapter.featurize(records, ctx))
