"""`klue train` and `klue predict`: fine-tune any Hugging Face encoder on a KLUE task, and apply it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from klue.cli._common import (
    metric_mode,
    parse_key_values,
    print_warnings,
    stderr,
    stdout,
    with_own_data,
)

if TYPE_CHECKING:
    from klue.benchmark.cells import FilesChoice


def register(app: typer.Typer) -> None:
    app.command("train", context_settings={"allow_extra_args": False})(with_own_data(train_command))
    app.command("predict")(predict_command)


def _default_output(task: str, model: str, protocol: str, seed: int) -> Path:
    name = Path(model).name if Path(model).expanduser().is_dir() else model.replace("/", "--")
    return Path("runs") / task / f"{name}__{protocol.replace(':', '-')}__seed{seed}"


def train_command(
    task_name: Annotated[str, typer.Option("--task", help="Task name or alias (klue-ner ...; `klue tasks` "
                                           "lists them); a task without a fine-tuning adapter says so.",
                                           show_default=False)],
    model: Annotated[str, typer.Option("--model", help="`classic` (the task's CPU baseline, no pretrained "
                                       "model), a Hugging Face hub name (klue/roberta-large) or a "
                                       "local directory: with weights = that pretrained model; config.json + "
                                       "tokenizer but no weights = train from scratch (see "
                                       "klue.models.tiny.make_tiny_model_dir); a `klue train` best/ directory "
                                       "= continue from it.", show_default=False)],
    overrides: Annotated[list[str] | None, typer.Argument(
        help="Hyper-parameter overrides key=value (learning_rate=2e-5 epochs=3 batch_size=16 max_len=256 "
        "eval_steps=500 group_by_length=false mixed_precision=bf16 ...).", show_default=False)] = None,
    recipe: Annotated[str | None, typer.Option("--recipe", help="Recipe name (paper: the official baseline's "
                                        "hyper-parameters by model size, the default) or a YAML file.",
                                        show_default=False)] = None,
    protocol: Annotated[str | None, typer.Option("--protocol", help="official (train -> dev, select on dev; the "
                                          "default), heldout (select on a 10% slice of train, report dev once), "
                                          "local:dev-80-20, a task's own (local:ner-train5000, "
                                          "local:ynat-resplit, ...), or hf (the Hugging Face klue/klue copy "
                                          "through `datasets`). --train FILE makes it `files`.",
                                          show_default=False)] = None,
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
    files: FilesChoice | None = None,  # the own-data options --train, --eval, ... (cli._common.with_own_data)
    report_to: Annotated[str | None, typer.Option(
        "--report-to", help="Also send the learning curve to trackers (comma list): tensorboard, mlflow, wandb; "
        "files under OUTPUT/tracking/ (W&B: WANDB_MODE=offline keeps it local).", show_default=False)] = None,
) -> None:
    """Fine-tune MODEL on TASK with the recipe's hyper-parameters, select the best checkpoint, and write
    results.json + predictions.jsonl scored with the official metrics.

    Runs on CPU, one GPU, or several through `accelerate launch --num_processes N $(which klue) train ...`;
    bf16/fp16 are used automatically where the GPU has them, bf16 on a CPU with bf16 units (amx_bf16,
    avx512_bf16) (mixed_precision=auto). `--model classic` trains
    the task's CPU baseline instead (the same results.json and predictions.jsonl; it takes no overrides).
    """
    from klue import registry
    from klue.benchmark.cells import FILES_PROTOCOL, resolve_data
    from klue.errors import DataError
    from klue.families import family_of
    from klue.io.locate import roots_from
    from klue.io.lock import check_free
    from klue.io.output import output_dir_for_run
    from klue.protocols import OFFICIAL
    from klue.results import RESULTS_FILE
    from klue.scoring import RunRequest

    mode = metric_mode(mode)
    task = registry.get(task_name)
    family = family_of(model)
    if family.command != "train":
        raise DataError(f"--model {model} is of the {family.name} family, which `klue {family.command}` runs; "
                        "`klue train` trains the classic baselines and fine-tunes encoders")
    family.check(model)  # a spec its family cannot run is refused before anything is written
    values = parse_key_values(list(overrides or []), "override")
    if recipe is not None:
        if "recipe" in values:
            raise DataError("name the recipe once: --recipe or the override recipe=, not both")
        values["recipe"] = recipe
    if report_to is not None:
        values["report_to"] = report_to
    options = family.options(values)  # what the family does not take is refused before any work
    if report_to is not None:
        from klue.training.tracking import parse_report_to

        parse_report_to(report_to)  # an unknown or missing tracker is refused before any work
    if files is not None and protocol not in (None, FILES_PROTOCOL):
        raise DataError(f"--train/--eval make the protocol `files`; drop --protocol {protocol}")
    protocol = FILES_PROTOCOL if files is not None else (protocol or OFFICIAL)
    out = output or _default_output(task.name, model, protocol, seed)
    with output_dir_for_run(out, "--output"):  # checked before any data is read or model loaded
        check_free(out, "klue train")
        data = resolve_data(task, protocol, roots_from(data_dir, extra_data_dir), files)
        if os.environ.get("RANK", "0") == "0":  # the readers' warnings, once, with where they are all written
            from klue.results import DATA_WARNINGS_FILE

            print_warnings(data.warnings, out / DATA_WARNINGS_FILE)
        results = family.run_alone(RunRequest(task, model, data, seed, out, mode), options)
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
    best = f", best step {results.training.best_step}" if results.training else ""
    stderr.print(f"{results.n_train:,} train / {results.n_eval:,} eval examples, {results.train_time_s:.1f} s "
                 f"training ({speed} examples/s){best}; results in {out / RESULTS_FILE}", highlight=False)


def predict_command(
    task_name: Annotated[str, typer.Option("--task", help="Task the model was fine-tuned for.",
                                           show_default=False)],
    model: Annotated[Path, typer.Option("--model", help="A fine-tuned model directory (<run>/best from "
                                        "`klue train`). CPU baselines (`classic`) are not saved: they retrain "
                                        "in seconds, see below.", show_default=False)],
    input_path: Annotated[Path, typer.Option("--input", help="Examples in any format of the task, told from the "
                                             "file (or named by --input-format); gold fields may be absent.",
                                             show_default=False)],
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
    from klue.errors import DataError
    from klue.families import family_of
    from klue.io.output import check_output_file
    from klue.predictions import write_predictions
    from klue.results import CLASSIC
    from klue.tasks.reading import read
    from klue.training.run import predict

    task = registry.get(task_name)
    if family_of(str(model)).name == CLASSIC:
        raise DataError("--model classic: CPU baselines are not saved (a saved scikit-learn or CRF model would be "
                        "a pickle, which can run code when loaded); they retrain in seconds to minutes with "
                        f"`klue train --task {task.name} --model classic --train TRAIN --eval EVAL`, which writes "
                        "the baseline's predictions of EVAL. `klue predict` applies fine-tuned encoders (<run>/best)")
    check_output_file(output, "--output")  # before the inference, not after it
    # gold fields may be absent: new data
    records = read(task, input_path, input_format, purpose="predict", option="--input-format").records
    predictions = predict(task, model, records, eval_batch_size=batch_size, cpu=cpu)
    write_predictions(output, task, records, predictions, f"model {model}")
    stderr.print(f"{len(predictions):,} predictions written to {output}", highlight=False)
