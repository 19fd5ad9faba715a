"""`klue llm`: prompted generative LMs on the KLUE tasks with the official metrics, as a benchmark directory
that `klue report` reads beside fine-tuned encoders and baselines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

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
from klue.io.endpoints import ServerOptions
from klue.io.redact import redact_text
from klue.llm.spec import known_kinds

if TYPE_CHECKING:
    from klue.benchmark.cells import FilesChoice


def register(app: typer.Typer) -> None:
    app.command("llm")(with_own_data(llm_command))


def llm_command(
    model: Annotated[list[str], typer.Option(
        "--model", "-m", help=f"{known_kinds()}. Repeat for several.", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Benchmark directory (resumable; `klue report` "
                                      "reads it).", show_default=False)],
    tasks: Annotated[str, typer.Option(help="`all` or comma-separated task names.")] = "all",
    shots: Annotated[int, typer.Option(help="Few-shot examples per prompt, drawn from the protocol's training "
                                       "part with the seed (never from the evaluation part).")] = 0,
    method: Annotated[str, typer.Option("--method", "--mode", help="How answers are scored: auto "
                                        "(log-likelihood over the choices where the task and the backend allow "
                                        "it, else generate and parse), loglik or generate. --mode is its old "
                                        "name.")] = "auto",
    form: Annotated[str, typer.Option(help="completion (a plain prompt; base models) or chat (the model's chat "
                                      "template or the server's chat endpoint).")] = "completion",
    limit: Annotated[int | None, typer.Option(help="Only the first N evaluation examples: a partial score, "
                                              "marked so and never ranked.", show_default=False)] = None,
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds (they change the few-shot draw).")] = "1",
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once (HTTP backends).")] = 4,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request.")] = 120.0,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the API key of an HTTP "
                                             "backend (never written to any output).")] = "OPENAI_API_KEY",
    batch_size: Annotated[int, typer.Option(help="Sequences per forward pass (in-process backend).")] = 8,
    protocol: Annotated[str, typer.Option(help="auto, official, heldout, hf or local:<name>; the training part "
                                          "only supplies few-shot examples.")] = "auto",
    max_context: Annotated[int | None, typer.Option(help="The model's context in tokens, where the server does "
                                                    "not say it (llama-cpp-python): prompts are fitted to it by "
                                                    "dropping shots, then cutting the example's own context "
                                                    "(docs/llm.md).", show_default=False)] = None,
    strict_model: Annotated[bool, typer.Option("--strict-model", help="A model name the server does not list "
                                               "(GET /v1/models) is an error (exit 2), not a warning.")] = False,
    unconstrained: Annotated[bool, typer.Option("--unconstrained", help="Never ask the backend for "
                                                "constrained decoding (grammar / JSON schema).")] = False,
    metric: MetricModeOption = "official",
    data_dir: DataDirOption = None,
    extra_data_dir: ExtraDataDirOption = None,
    jobs: JobsOption = 1,
    files: FilesChoice | None = None,  # the own-data options --train, --eval, ... (cli._common.with_own_data)
) -> None:
    """Evaluate prompted LMs on KLUE tasks with the official metrics.

    Korean prompts from each task's package (versioned), log-likelihood over the label words or generation
    parsed into the task's prediction format; unparsable answers are scored as wrong and counted. Requests
    are cached (OUT/<task>/<model>/seed<k>/llm_cache.sqlite): run the same command again to resume without
    asking the model twice. Then `klue report OUT`.
    """
    from klue.benchmark.runner import BenchmarkPlan, run_benchmark
    from klue.cli.benchmark import check_protocol, parse_seeds, print_leaderboard, resolve_tasks
    from klue.families.llm import FAMILY
    from klue.reporting.html import REPORT_FILE

    for spec in model:
        FAMILY.check(spec)  # a spec no LLM backend takes, or a malformed one, is refused before anything runs
    if shots < 0 or (limit is not None and limit < 1) or (max_context is not None and max_context < 1):
        raise DataError("--shots must be 0 or more, --limit and --max-context 1 or more")
    settings: dict[str, Any] = {"method": method, "form": form, "shots": shots, "limit": limit,
                                "constrained": not unconstrained, "max_context": max_context, "concurrency": concurrency, "timeout_s": timeout,
                                "api_key_env": api_key_env, "batch_size": batch_size}
    options = FAMILY.options(settings)  # checks --concurrency, --timeout, --batch-size (ServerOptions)
    _check_served(model, options.backend, strict_model)
    plan = BenchmarkPlan(resolve_tasks(tasks), tuple(model), parse_seeds(seeds), out, check_protocol(protocol),
                         metric_mode(metric), data_dir, extra_data_dir, tuple(settings.items()), files)
    summary = run_benchmark(plan, jobs=jobs, console=stderr)
    print_leaderboard(out)
    stderr.print(f"{len(summary.outcomes)} cells run, {len(summary.skipped)} already done, {len(summary.failed)} "
                 f"failed; results in {out}. Report: klue report {out} -o {out / REPORT_FILE}", highlight=False)
    if summary.failed:
        raise typer.Exit(1)


def _check_served(models: list[str], options: ServerOptions, strict: bool) -> None:
    """Ask each server once, before any cell: a name it does not list is a warning on screen (an error with
    --strict-model); a server that cannot be reached stops the run here, with exit 3 (UnreachableError)."""
    from klue.llm.spec import parse_spec, served_warning

    for spec in dict.fromkeys(models):
        warning = served_warning(parse_spec(spec), options)
        if warning is None:
            continue
        if strict:
            raise DataError(f"{redact_text(spec)}: {warning} (--strict-model)")
        stderr.print(f"[yellow]warning:[/yellow] {escape(redact_text(spec))}: {escape(warning)}; the run goes on "
                     "(--strict-model makes this an error)", highlight=False)
