"""`klue.training.run`: fine-tune one encoder on one task under one protocol, and write its results.

`run(request, overrides) -> Results` (a `klue.scoring.RunRequest`).
The output directory receives:
    predictions.jsonl   prediction-file objects for the evaluated split (from the best checkpoint)
    results.json        the judge's Results: scores from scoring predictions.jsonl as `klue score` does
    best/               the best model by the selection metric (`klue predict --model <out>/best`)
    checkpoints/        resumable state while the run is in progress (removed at the end by default)
Running the same command again after a crash resumes from the last checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.models.features import FeaturizeContext
from klue.predictions import write_predictions
from klue.results import ENCODER, PREDICTIONS_FILE, Results, TrainingSummary
from klue.scoring import ProducerReport, RunRequest
from klue.tasks.base import Task
from klue.training import checkpoint, recipes


def usable_max_len(tokenizer: Any, config: Any) -> int:
    """The longest input the model takes: the position table, and the tokenizer's own limit when it sets
    one (RoBERTa-type configs have 2 more positions than usable, their tokenizer says 512)."""
    limits = [int(getattr(config, "max_position_embeddings", 0) or 0)]
    declared = getattr(tokenizer, "model_max_length", None)
    if isinstance(declared, int) and 0 < declared < 1_000_000:
        limits.append(declared)
    return min(x for x in limits if x > 0)


def run(request: RunRequest, overrides: dict[str, Any], *, recipe: str | None = None,
        on_step: Callable[[int], None] | None = None) -> Results:
    """Fine-tune `request.model_spec` (hub name or local directory) on `request.task`; see the module docstring.

    `overrides` are hyper-parameters (klue.training.recipes.Hyperparameters fields) and may name the
    recipe under "recipe" (default "paper"). `on_step` is called after every optimizer step (tests use
    it to interrupt a run). One writer per output directory: `klue train` holds it (the family's
    `run_alone`, klue.io.lock); a benchmark cell runs under the benchmark's lock."""
    return _run(request, overrides, recipe, on_step)


def _run(request: RunRequest, overrides: dict[str, Any], recipe: str | None,
         on_step: Callable[[int], None] | None) -> Results:
    from accelerate.utils import set_seed

    from klue.models.heads import EncoderWithHead
    from klue.models.loading import (
        ModelCard,
        fit_embeddings,
        load_encoder,
        load_finetuned_weights,
        uses_token_type_ids,
    )
    from klue.training.engine import BEST_DIR, Engine, make_accelerator

    wall_start = time.perf_counter()
    task, model, protocol_data, seed = request.task, str(request.model_spec), request.protocol_data, request.seed
    out_dir, mode = Path(request.out_dir), request.metric_mode
    overrides = dict(overrides)
    recipe_name = recipe or str(overrides.pop("recipe", None) or recipes.PAPER)
    adapter = task.make_adapter()

    set_seed(seed, deterministic=bool(overrides.get("deterministic", False)))
    loaded = load_encoder(model)
    resolved = recipes.resolve(recipe_name, task.name, loaded.config, overrides)
    hp = resolved.hyperparameters
    limit = usable_max_len(loaded.tokenizer, loaded.config)
    if hp.max_len > limit:
        raise DataError(f"max_len={hp.max_len} exceeds what {model} accepts ({limit} tokens); "
                        f"override max_len={limit} or less")
    accelerator = make_accelerator(hp, out_dir)
    adapter.attach_data(protocol_data.roots)
    adapter.prepare(loaded.tokenizer, protocol_data.train)
    added_tokens = fit_embeddings(loaded.encoder, loaded.tokenizer)
    spec = adapter.head_spec(hp.dropout, hp.head_options)
    set_seed(seed)  # the head's initial weights depend on the seed only, not on how the encoder was loaded
    head_model = adapter.build_model(loaded.encoder, spec)
    head_from_pooler = (loaded.pooler is not None and isinstance(head_model, EncoderWithHead)
                        and head_model.start_from_pooler(loaded.pooler))
    ctx = FeaturizeContext(loaded.tokenizer, hp.max_len, uses_token_type_ids(loaded.config), hp.overlap)

    train_features = adapter.featurize(protocol_data.train, ctx)
    # Adapters count cut inputs per featurize call: read the training count before the next call resets it.
    truncated_train = getattr(adapter, "truncated", None)
    selection_records = protocol_data.selection if protocol_data.selection is not None else protocol_data.eval
    selection_features = adapter.featurize(selection_records, ctx)
    eval_features = (adapter.featurize(protocol_data.eval, ctx) if protocol_data.selection is not None
                     else selection_features)
    selection_metric = task.metric_spec(hp.selection_metric or task.key_metric)
    selection_note = (f"held-out selection set ({len(protocol_data.selection)} examples); eval reported once "
                      "with the selected checkpoint" if protocol_data.selection is not None
                      else f"eval set ({len(protocol_data.eval)} examples), as the official recipe selects on dev")

    card = ModelCard(task.name, task.version, model, spec, hp.max_len, hp.overlap, seed, resolved.name,
                     protocol_data.protocol)
    run_fingerprint = checkpoint.fingerprint({
        "task": task.name, "model": model, "protocol": protocol_data.protocol, "seed": seed, "mode": mode,
        "hyperparameters": {k: v for k, v in hp.to_json().items() if k not in recipes.HOW_TO_RUN},
        "sources": [asdict(s) for s in protocol_data.sources], "n_train": len(protocol_data.train),
        "num_processes": accelerator.num_processes})

    engine = Engine(accelerator, head_model, adapter, ctx, hp)
    fit = engine.fit(train_features, selection_records, selection_features, seed, out_dir, mode, card,
                     run_fingerprint, selection_metric, on_step=on_step)

    # Report from the best checkpoint (the last one if no evaluation ever improved, which cannot happen:
    # the first evaluation always sets the best).
    load_finetuned_weights(out_dir / BEST_DIR, accelerator.unwrap_model(engine.model))
    predictions = engine.predict(protocol_data.eval, eval_features)
    if accelerator.is_main_process:
        write_predictions(out_dir / PREDICTIONS_FILE, task, protocol_data.eval, predictions, f"model {model!r}")
    accelerator.wait_for_everyone()  # every process judges the file the main one wrote

    state = fit.state
    training = TrainingSummary(
        selection_metric=selection_metric.name, checkpoint_selection=selection_note, best_step=state.best_step,
        best_selection_score=state.best_score, total_steps=fit.total_steps, steps_per_epoch=fit.steps_per_epoch,
        num_processes=accelerator.num_processes, device=str(accelerator.device),
        mixed_precision_used=accelerator.mixed_precision, model_source=loaded.source,
        head_from_pooler=head_from_pooler,
        num_parameters=sum(p.numel() for p in head_model.parameters()),
        use_token_type_ids=ctx.use_token_type_ids, added_tokens=added_tokens,
        n_train_features=len(train_features), n_eval_features=len(eval_features),
        truncated_train_features=truncated_train, resumed_from_steps=list(state.resumed_from),
        overrides=dict(resolved.overrides), eval_time_s=state.eval_time_s,
        checkpoints_written=state.checkpoints_written, checkpoint_time_s=state.checkpoint_time_s,
        best_written=state.best_written, best_time_s=state.best_time_s)
    producer = ProducerReport(
        model=model, model_family=ENCODER, seed=seed, started=wall_start, recipe=resolved.name,
        hyperparameters=hp.to_json(), training=training, learning_curve=list(state.learning_curve),
        train_time_s=state.train_time_s,
        train_examples_per_s=state.examples_seen / state.train_time_s if state.train_time_s > 0 else None,
        eval_examples_per_s=engine.eval_examples_per_s)
    results = request.judge(protocol_data, producer, write=accelerator.is_main_process)
    if not hp.keep_checkpoints:
        checkpoint.remove_all(accelerator, out_dir)
    accelerator.wait_for_everyone()
    return results


def predict(task: Task[Any, Any], model_dir: Path, records: Sequence[Any], *, eval_batch_size: int = 64,
            cpu: bool = False, mixed_precision: str = "auto") -> list[Any]:
    """Predictions of a fine-tuned model directory (`<out>/best` of a run) for `records`."""
    from klue.models.loading import load_finetuned, uses_token_type_ids
    from klue.training.engine import Engine, make_accelerator

    finetuned = load_finetuned(Path(model_dir))
    trained_for = finetuned.card.task
    if trained_for != task.name:
        raise DataError(f"{model_dir} was fine-tuned for task {trained_for!r}, not {task.name!r}", model_dir)
    adapter = task.make_adapter()
    adapter.prepare(finetuned.tokenizer, None)  # the saved tokenizer already holds any added tokens
    model = adapter.build_model(finetuned.encoder, finetuned.head)
    finetuned.load_weights_into(model)
    hp = recipes.Hyperparameters(max_len=finetuned.card.max_len, window_overlap=finetuned.card.window_overlap,
                                 eval_batch_size=eval_batch_size, cpu=cpu, mixed_precision=mixed_precision,
                                 progress=False)
    accelerator = make_accelerator(hp)
    model = accelerator.prepare(model)
    ctx = FeaturizeContext(finetuned.tokenizer, hp.max_len, uses_token_type_ids(finetuned.encoder.config),
                           hp.overlap)
    engine = Engine(accelerator, model, adapter, ctx, hp)
    return engine.predict(records, adapter.featurize(records, ctx))
