"""`klue embed`: sentence-embedding models on the KLUE tasks where they apply, with the official metrics, as a
benchmark directory that `klue report` and `klue compare` read beside fine-tuned encoders, CPU baselines and
prompted LMs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from klue.cli._common import (
    DataDirOption,
    ExtraDataDirOption,
    JobsOption,
    MetricModeOption,
    metric_mode,
    stderr,
    with_own_data,
)
from klue.errors import DataError

if TYPE_CHECKING:
    from klue.benchmark.cells import FilesChoice


def register(app: typer.Typer) -> None:
    app.command("embed")(with_own_data(embed_command))


def applicable_tasks(names: str) -> tuple[tuple[str, ...], list[str]]:
    """The tasks of `--tasks` that sentence-embedding models apply to, and the names of those `all` left out;
    a task named on purpose that does not apply is refused with its reason."""
    from klue import registry
    from klue.families.embedding import FAMILY

    chosen = registry.resolve(names)
    why = {t.name: FAMILY.not_applicable(t) for t in chosen}
    if names.strip().lower() == "all":
        return tuple(t.name for t in chosen if why[t.name] is None), [t.name for t in chosen if why[t.name]]
    refused = [f"{name}: {reason}" for name, reason in why.items() if reason is not None]
    if refused:
        usable = ", ".join(t.name for t in registry.all_tasks() if FAMILY.not_applicable(t) is None)
        raise DataError(f"not applicable to sentence-embedding models: {'; '.join(refused)}. klue embed takes "
                        f"{usable}")
    return tuple(t.name for t in chosen), []


def check_done_cells(cells: list[Any], prompt: str | None, pooling: str | None) -> None:
    """A cell already done under another prompt or pooling would be kept as it is by the resume rule (a done
    cell is not run again): refuse, rather than report it as this run's."""
    from klue.results import RESULTS_FILE, read_results

    for cell in cells:
        path = cell.path / RESULTS_FILE
        if not path.is_file():
            continue
        try:
            done = read_results(path).embedding
        except DataError:
            continue  # an unreadable results file is run again anyway
        if done is None:
            continue
        for option, asked, recorded in (("--prompt", prompt, done.prompt), ("--pooling", pooling, done.pooling)):
            if asked is not None and asked != recorded:
                raise DataError(f"{path} was made with {option} {recorded!r}, not {asked!r}; use another --out, or "
                                "delete that cell to run it again", path)


def embed_command(
    model: Annotated[list[str], typer.Option(
        "--model", "-m", help="emb:DIR (a local sentence-transformers model or Hugging Face encoder, in this "
        "process) or emb:openai:MODEL@BASE_URL (an OpenAI-compatible /v1/embeddings server: "
        "text-embeddings-inference, vLLM, Ollama, llama.cpp, a hosted API). Repeat for several.",
        show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Benchmark directory (resumable; `klue report` "
                                      "reads it).", show_default=False)],
    tasks: Annotated[str, typer.Option(help="`all` (every task a sentence embedding applies to) or "
                                       "comma-separated task names.")] = "all",
    prompt: Annotated[str | None, typer.Option(help="Text put before every input (e5 wants \"query: \"). "
                                               "Default: the model's own prompt where a sentence-transformers "
                                               "model declares one, else none.", show_default=False)] = None,
    pooling: Annotated[str | None, typer.Option(help="emb:DIR encoders without their own pooling: mean "
                                                "(default), cls or last.", show_default=False)] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass (in process) or per request "
                                            "(HTTP).")] = 32,
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once (HTTP).")] = 4,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request.")] = 120.0,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the API key of a server "
                                             "(never written to any output).")] = "OPENAI_API_KEY",
    max_length: Annotated[int | None, typer.Option(help="Tokens per text (in process; default: the model's "
                                                   "own limit).", show_default=False)] = None,
    cpu: Annotated[bool, typer.Option("--cpu", help="Run an in-process model on the CPU even where there is "
                                      "a GPU.")] = False,
    limit: Annotated[int | None, typer.Option(help="Only the first N evaluation examples: a partial score, "
                                              "marked so and never ranked.", show_default=False)] = None,
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds (the classifier's).")] = "1",
    protocol: Annotated[str, typer.Option(help="auto, official, heldout, hf or local:<name>; the model is "
                                          "fitted on the protocol's training part.")] = "auto",
    cache: Annotated[Path | None, typer.Option(help="The embedding cache (default OUT/embedding_cache.sqlite, "
                                               "shared by every task and seed).", show_default=False)] = None,
    metric: MetricModeOption = "official",
    data_dir: DataDirOption = None,
    extra_data_dir: ExtraDataDirOption = None,
    jobs: JobsOption = 1,
    files: FilesChoice | None = None,  # the own-data options --train, --eval, ... (cli._common.with_own_data)
) -> None:
    """Evaluate sentence-embedding models on KLUE tasks with the official metrics.

    Each task says what it embeds. Similarity tasks: the cosine similarity of the two embeddings, calibrated
    to the score scale on the training part (and the cosine's Spearman correlation beside, as MTEB reports
    it). Classification tasks (one text, a pair, a sentence with its entities marked): a logistic regression
    on the frozen embeddings, fitted on the training part. Tasks whose outputs are per token, spans or
    dialogue states do not apply and are refused with the reason. Embeddings are cached
    (OUT/embedding_cache.sqlite): run the same command again to resume. Then `klue report OUT`.
    """
    from klue.benchmark.runner import BenchmarkPlan, run_benchmark
    from klue.cli.benchmark import check_protocol, parse_seeds, print_leaderboard
    from klue.embed.cache import CACHE_FILE
    from klue.families.embedding import FAMILY, option_defaults
    from klue.reporting.html import REPORT_FILE

    for spec in model:
        FAMILY.check(spec)  # a malformed spec is refused before anything runs
    if limit is not None and limit < 1:
        raise DataError("--limit must be 1 or more")
    names, left_out = applicable_tasks(tasks)
    options: dict[str, Any] = {"prompt": prompt, "pooling": pooling, "batch_size": batch_size,
                               "concurrency": concurrency, "timeout_s": timeout, "api_key_env": api_key_env,
                               "max_length": max_length, "cpu": cpu, "limit": limit,
                               "cache": str(cache or out / CACHE_FILE)}
    FAMILY.options(options)  # checks them (klue.io.endpoints.ServerOptions: --concurrency, --batch-size, --timeout)
    defaults = option_defaults()
    settings = tuple((k, v) for k, v in options.items() if v is not None and v != defaults.get(k))
    plan = BenchmarkPlan(names, tuple(model), parse_seeds(seeds), out, check_protocol(protocol), metric_mode(metric),
                         data_dir, extra_data_dir, settings, files)
    check_done_cells(plan.cells(), prompt, pooling)
    if left_out:
        stderr.print(f"not applicable to sentence-embedding models, left out: {', '.join(left_out)}",
                     highlight=False)
    summary = run_benchmark(plan, jobs=jobs, console=stderr)
    print_leaderboard(out)
    stderr.print(f"{len(summary.outcomes)} cells run, {len(summary.skipped)} already done, {len(summary.failed)} "
                 f"failed; results in {out}. Report: klue report {out} -o {out / REPORT_FILE}", highlight=False)
    if summary.failed:
        raise typer.Exit(1)
