"""`klue contamination`: is a KLUE score earned or remembered? `scan` looks for the tasks' examples in a
training corpus (n-gram overlap, docs/contamination.md); `mink` scores them with a model's log-probabilities
(Min-K% Prob, Min-K%++)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from klue.cli._common import DataDirOption, ExtraDataDirOption

contamination_app = typer.Typer(
    name="contamination",
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="Contamination: which KLUE examples a training corpus holds (`scan`), and model-based membership "
    "scores (`mink`).",
)


def register(app: typer.Typer) -> None:
    app.add_typer(contamination_app, name="contamination")


@contamination_app.command("scan")
def scan_command(
    corpus: Annotated[list[str], typer.Option(
        "--corpus", "-c", help="A corpus: a file (plain text, one document a line; JSONL; parquet; any of them "
        "gzip- or zstd-compressed), a `datasets` save_to_disk directory, a directory (every file under it) or a "
        "glob. Repeat for several.", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory: TASK/examples.jsonl and "
                                      "summary.json (resumable: corpus files already scanned are skipped).",
                                      show_default=False)],
    text_field: Annotated[str, typer.Option(
        "--text-field", help="The field holding the text in JSONL, parquet and `datasets` corpora.")] = "text",
    tasks: Annotated[str, typer.Option(help="`all` (every task whose set is on hand) or comma-separated task "
                                       "names.")] = "all",
    protocol: Annotated[str | None, typer.Option(
        help="Scan this protocol's evaluation set instead of the official dev file (`klue tasks` lists them).",
        show_default=False)] = None,
    eval_file: Annotated[Path | None, typer.Option(
        "--eval", help="Scan this file's examples (one task; any reader of the task, told from the file).",
        show_default=False)] = None,
    eval_format: Annotated[str | None, typer.Option(
        "--eval-format", help="Format of --eval (official, kornli, korsts, conllu, squad, datasets, parquet, ...).",
        show_default=False)] = None,
    unit: Annotated[str, typer.Option(
        help="eojeol: whitespace-separated units; char: characters with the spaces removed (a re-spaced copy "
        "matches); word: whitespace-separated as lm-evaluation-harness's word_ngrams (the GPT-3 method).")] = "eojeol",
    n: Annotated[int | None, typer.Option(
        "--n", help="Units per n-gram (default: 8 eojeols, 13 words, 25 characters).", show_default=False)] = None,
    normalise: Annotated[str, typer.Option(
        help="klue: NFC, case-folded, punctuation as space; gpt3: lm-evaluation-harness's Janitor.normalize_string "
        "(ASCII lower-cased, ASCII punctuation deleted).")] = "klue",
    workers: Annotated[int, typer.Option(
        help="Processes that scan the corpus; each reads its own byte ranges of an uncompressed text or JSON Lines "
        "file (a compressed file is decompressed by this process).")] = 1,
    executor: Annotated[str, typer.Option(
        help="local (processes on this machine, --workers) or ray (tasks on a Ray cluster: RAY_ADDRESS, else a "
        "local one).")] = "local",
    data_dir: DataDirOption = None,
    extra_data_dir: ExtraDataDirOption = None,
) -> None:
    """Which examples of the KLUE tasks a training corpus holds: n-gram overlap, streamed over the corpus.

    An example is dirty on its input when one of its input n-grams is in the corpus, and dirty with its answer
    when one corpus document holds its input and its answer (each task declares which fields are which). Per
    example: the longest match in units, the share of its units inside matches, and where the first match is
    (corpus file, line and byte offset). Written atomically as OUT/TASK/examples.jsonl and OUT/summary.json.
    """
    from klue.contamination.command import run_scan_command

    run_scan_command(corpus=corpus, out=out, text_field=text_field, tasks=tasks, protocol=protocol,
                     eval_file=eval_file, eval_format=eval_format, unit=unit, n=n, normalise=normalise,
                     workers=workers, executor=executor, data_dir=data_dir, extra_data_dir=extra_data_dir)


@contamination_app.command("mink")
def mink_command(
    model: Annotated[str, typer.Option("--model", "-m", help="The model, as `klue llm` names it: hf:NAME_OR_DIR "
                                       "or hf:FILE.gguf (every score), or openai:MODEL@URL (a server whose echoed "
                                       "prompt log-probs pass the probe: no Min-K%++).", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory: TASK/examples.jsonl, summary.json "
                                      "and the request cache (a rerun asks the model nothing).",
                                      show_default=False)],
    tasks: Annotated[str, typer.Option(help="`all` or comma-separated task names.")] = "all",
    k: Annotated[list[float] | None, typer.Option(
        "--k", help="The share of lowest-scoring tokens Min-K% and Min-K%++ average (0.2 for 20%). Repeat for "
        "several.", show_default="0.2")] = None,
    members: Annotated[Path | None, typer.Option(
        help="A file of guids known to be in the model's training data, one a line: AUROC of every score, "
        "members against the other examples. Without it only the scores and their distribution (weak evidence).",
        show_default=False)] = None,
    protocol: Annotated[str | None, typer.Option(
        help="Score this protocol's evaluation set instead of the official dev file.", show_default=False)] = None,
    eval_file: Annotated[Path | None, typer.Option(
        "--eval", help="Score this file's examples (one task).", show_default=False)] = None,
    eval_format: Annotated[str | None, typer.Option(
        "--eval-format", help="Format of --eval (told from the file when not given).", show_default=False)] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N examples of each task.",
                                              show_default=False)] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass (in-process backend).")] = 8,
    cpu: Annotated[bool, typer.Option("--cpu", help="Stay on the CPU where there is a GPU.")] = False,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples behind the AUROC intervals.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the resampling.")] = 0,
    data_dir: DataDirOption = None,
    extra_data_dir: ExtraDataDirOption = None,
) -> None:
    """Model-based membership scores of each example's input text: Min-K% Prob, Min-K%++ (in process), the
    loss and the zlib ratio.

    AUROC only against --members; without it the scores are written with their distribution and stated as
    weak evidence (docs/contamination.md). Written atomically as OUT/TASK/examples.jsonl and OUT/summary.json.
    """
    from klue.cli._common import stderr
    from klue.contamination.mink import run_mink_command, summary_lines

    summary = run_mink_command(model=model, tasks=tasks, out=out, ks=k, members_file=members, protocol=protocol,
                               eval_file=eval_file, eval_format=eval_format, limit=limit, batch_size=batch_size,
                               cpu=cpu, resamples=resamples, seed=seed, data_dir=data_dir,
                               extra_data_dir=extra_data_dir)
    for line in summary_lines(summary):
        stderr.print(line, markup=False, highlight=False)
