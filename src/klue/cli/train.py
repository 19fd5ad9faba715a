"""`klue train` and `klue predict`: fine-tune any Hugging Face encoder on a KLUE task, and apply it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from klue.cli._common import metric_mode, parse_key_values, stderr, stdout


def register(app: typer.Typer) -> None:
    app.command("train", context_settings={"allow_extra_args": False})(train_command)
    app.command("predict")(predict_command)


def _default_output(task: str, model: str, protocol: str, seed: int) -> Path:
    name = Path(model).name if Path(model).expanduser().is_dir() else model.replace("/", "--")
    return Path("runs") / task / f"{name}__{protocol.replace(':', '-')}__seed{seed}"


def train_command(
    task_name: Annotated[str, typer.Option("--task", help="Task name or alias (klue-ner ...; `klue tasks` "
                                           "lists them); a task without a fine-tuning adapter says so.",
                                           show_default=False)],
    model: Annotated[str, typer.Option("--model", help="A Hugging Face hub name (klue/roberta-large) or a "
                                       "local directory: with weights = that pretrained model; config.json + "
                                       "tokenizer but no weights = train from scratch (see "
                                       "klue.models.tiny.make_tiny_model_dir); a `klue train` best/ directory "
                                       "= continue from it.", show_default=False)],
    overrides: Annotated[list[str] | None, typer.Argument(
        help="Hyper-parameter overrides key=value (learning_rate=2e-5 epochs=3 batch_size=16 max_len=256 "
        "eval_steps=500 group_by_length=true mixed_precision=bf16 ...).", show_default=False)] = None,
    recipe: Annotated[str | None, typer.Option("--recipe", help="Recipe name (paper: the official baseline's "
                                        "hyper-parameters by model size, the default) or a YAML file.",
                                        show_default=False)] = None,
    protocol: Annotated[str, typer.Option("--protocol", help="official (train -> dev, select on dev), heldout "
                                          "(select on a 10% slice of train, report dev once), "
                                          "local:dev-80-20, or a task's own (local:ner-train5000, "
                                          "local:ynat-resplit, ...).")] = "official",
    seed: Annotated[int, typer.Option("--seed", help="Random seed (weights of new layers, data order, "
                                      "dropout).")] = 42,
    output: Annotated[Path | None, typer.Option("--output", help="Run directory (results.json, "
                                                "predictions.jsonl, best/); default "
                                                "runs/<task>/<model>__<protocol>__seed<N>. Re-running into "
                                                "the same directory resumes an interrupted run.",
                                                show_default=False)] = None,
    data_dir: Annotated[str | None, typer.Option("--data-dir", help="Official KLUE layout (else "
                                                 "KLUE_DATA_DIR, else the cache).", show_default=False)] = None,
    extra_data_dir: Annotated[str | None, typer.Option(
        "--extra-data-dir", help="Directory holding klue-partial/, klue-derived/, korean/ (else "
        "KLUE_EXTRA_DATA_DIR).", show_default=False)] = None,
    mode: Annotated[str, typer.Option("--mode", help="Metric mode: official or corrected.")] = "official",
) -> None:
    """Fine-tune MODEL on TASK with the recipe's hyper-parameters, select the best checkpoint, and write
    results.json + predictions.jsonl scored with the official metrics.

    Runs on CPU, one GPU, or several through `accelerate launch --num_processes N $(which klue) train ...`;
    bf16/fp16 are used automatically where the GPU has them (mixed_precision=auto).
    """
    from klue import registry
    from klue.io.locate import roots_from
    from klue.protocols import resolve
    from klue.results import RESULTS_FILE
    from klue.training.run import run

    mode = metric_mode(mode)
    task = registry.get(task_name)
    values = parse_key_values(list(overrides or []), "override")
    data = resolve(task, protocol, roots_from(data_dir, extra_data_dir))
    out = output or _default_output(task.name, model, protocol, seed)
    results = run(task, model, data, seed, out, values, mode, recipe=recipe)
    if os.environ.get("RANK", "0") != "0":  # under `accelerate launch`, only the main process reports
        return
    from rich.table import Table

    table = Table(title=f"{task.name} · {model} · {data.protocol} · seed {seed} ({mode} metrics)")
    table.add_column("metric")
    table.add_column("score", justify="right")
    for name, value in results.scores.items():
        table.add_row(name, f"{value:.4f}")
    stdout.print(table)
    speed = f"{results.train_examples_per_s:,.0f}" if results.train_examples_per_s else "-"
    stderr.print(f"{results.n_train:,} train / {results.n_eval:,} eval examples, {results.train_time_s:.1f} s "
                 f"training ({speed} examples/s), best step {results.training.best_step if results.training else '-'}; "
                 f"results in {out / RESULTS_FILE}", highlight=False)


def predict_command(
    task_name: Annotated[str, typer.Option("--task", help="Task the model was fine-tuned for.",
                                           show_default=False)],
    model: Annotated[Path, typer.Option("--model", help="A fine-tuned model directory (<run>/best from "
                                        "`klue train`).", show_default=False)],
    input_path: Annotated[Path, typer.Option("--input", help="Examples in the task's official format (or "
                                             "the format named by --input-format).", show_default=False)],
    output: Annotated[Path, typer.Option("--output", help="Prediction file to write (JSON Lines, one "
                                         "object per example; `klue score` reads it).", show_default=False)],
    input_format: Annotated[str | None, typer.Option(
        "--input-format", help="Another reader of the task (e.g. ynat-resplit, kornli).",
        show_default=False)] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Examples per inference batch.")] = 64,
    cpu: Annotated[bool, typer.Option("--cpu", help="Run on CPU even when a GPU is present.")] = False,
) -> None:
    """Predict INPUT with a fine-tuned MODEL and write one prediction per example to OUTPUT."""
    from klue import registry
    from klue.errors import DataError, ProblemLog
    from klue.predictions import write_predictions
    from klue.training.run import predict

    task = registry.get(task_name)
    if input_format is not None and input_format not in task.other_readers:
        known = ", ".join(task.other_readers) or "none"
        raise DataError(f"--input-format {input_format!r}: {task.name} readers are {known}")
    reader = task.reader(input_format)
    log = ProblemLog(str(input_path))
    records = reader(input_path, log)
    log.raise_if_errors()
    predictions = predict(task, model, records, eval_batch_size=batch_size, cpu=cpu)
    write_predictions(output, task, records, predictions, f"model {model}")
    stderr.print(f"{len(predictions):,} predictions written to {output}", highlight=False)
