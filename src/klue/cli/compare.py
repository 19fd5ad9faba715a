"""`klue compare`: is run A really better than run B? Paired bootstrap intervals and p-values per metric."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from klue.cli._common import stderr, stdout
from klue.errors import DataError


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_command)


def compare_command(
    run_a: Annotated[str, typer.Argument(
        help="A: a run directory (holding results.json and statistics.npz, e.g. OUT/ner/classic/seed1), or a "
        "benchmark directory and a model as BENCHDIR::MODEL (its seeds are combined, every task it has).",
        show_default=False)],
    run_b: Annotated[str, typer.Argument(help="B, in the same forms as A.", show_default=False)],
    resamples: Annotated[int, typer.Option("--resamples", "-r", help="Bootstrap resamples and "
                                           "randomisation draws.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random streams (recorded in --json).")] = 0,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level of the verdicts.")] = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Compare two runs on the same evaluation set, metric by metric (docs/statistics.md).

    For each metric: A and B with 95% bootstrap intervals, the difference A - B with its paired-bootstrap
    interval, the p-value of approximate randomisation (each example, or each group of examples that
    belong together, swapped between A and B at random) and a verdict in words. Examples are resampled by
    the task's groups (a premise's pairs, a context's questions, a dialogue's turns).

    Refuses (exit 2) runs on different evaluation sets or with different metric modes. Works from the
    statistics the judge stored in each run directory; gold data is not needed.
    """
    from klue.reporting.compare import compare_specs, format_p, metric_info, to_json, verdict

    if resamples < 1:
        raise DataError(f"--resamples must be at least 1, not {resamples}")
    if not 0.0 < alpha < 1.0:
        raise DataError(f"--alpha must be between 0 and 1, not {alpha}")
    with stderr.status(f"comparing ({resamples} resamples)..."):
        comparisons = compare_specs(run_a, run_b, resamples, seed)
    if as_json:
        print(json.dumps(to_json(run_a, run_b, comparisons, resamples, seed, 0.95, alpha), ensure_ascii=False,
                         indent=2))
        return
    from rich.markup import escape
    from rich.table import Table

    stdout.print(f"A: {escape(run_a)}\nB: {escape(run_b)}")
    for c in comparisons:
        seeds = f"A seeds {', '.join(map(str, c.a_seeds))}, B seeds {', '.join(map(str, c.b_seeds))}"
        table = Table(title=f"{c.task}: {c.n_examples:,} examples, {c.n_units:,} resampling units, {c.mode} "
                      f"metrics; {seeds}", title_justify="left", header_style="bold")
        table.add_column("metric")
        for name in ("A", "B", "A − B", "95% CI of A − B", "p"):
            table.add_column(name, justify="right", no_wrap=True)
        for d in c.differences:
            label, _ = metric_info(c.task, d.metric)
            table.add_row(escape(label), f"{d.a.value:.2f}", f"{d.b.value:.2f}", f"{d.difference:+.2f}",
                          f"[{d.low:+.2f}, {d.high:+.2f}]", format_p(d.p_value))
        stdout.print(table)
        for d in c.differences:
            stdout.print(f"  {c.task}: {escape(verdict(c.task, d, alpha))}")
    stdout.print(f"{resamples} resamples, seed {seed}. A and B alone: `--json` has their 95% intervals. "
                 "p: approximate randomisation, two-sided.")
