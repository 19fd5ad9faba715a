"""The leaderboard as one neutral table, rendered as Markdown, as a rich table, or (html.py) as HTML."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from klue.reporting.aggregate import Aggregate, Entry, Row, TaskInfo
from klue.reporting.intervals import REPORT_RESAMPLES, Intervals, compute_intervals, interval_text
from klue.reporting.llm_runs import GENERATED_MARK, LLM_RUNS_TITLE, LlmRunsTable, build_llm_runs, generated

if TYPE_CHECKING:
    from klue.reporting.contamination import CleanTable, Scan

CellKind = Literal["value", "partial", "failed", "missing", "reference", "text"]

NOT_OFFICIAL_MARK = "†"
NOT_APPLICABLE = "n/a"  # a main metric the row's runs declared they cannot measure (Row.not_applicable_metrics)


# Words of metric names as people write them, for names no task declares (learning-curve keys, extras).
_WORDS = {"f1": "F1", "uas": "UAS", "las": "LAS", "auprc": "AUPRC", "pearsonr": "Pearson r", "rouge": "ROUGE",
          "w": "W", "acc": "acc.", "em": "EM"}


@functools.cache
def _declared_labels() -> dict[str, str]:
    """Metric name -> the label its spec declares, over every registered task."""
    from klue import registry

    return {spec.name: spec.label for task in registry.all_tasks() for spec in task.metric_specs.values()}


def metric_label(name: str) -> str:
    """`entity_macro_f1` -> `entity macro F1`: the label the metric's spec declares; other names (e.g. the
    learning curve's `selection_<metric>`) word by word."""
    declared = _declared_labels()
    if name in declared:
        return declared[name]
    if name.startswith("selection_") and name.removeprefix("selection_") in declared:
        return f"selection {declared[name.removeprefix('selection_')]}"
    return " ".join(_WORDS.get(part, part) for part in name.split("_"))


def metric_short(name: str) -> str:
    """A column-header label: `entity_macro_f1` -> `entity F1` (the full name is in the tooltip)."""
    return metric_label(name).replace("macro ", "").replace("character", "char.")


def task_label(info: TaskInfo) -> str:
    return info.label


@dataclass
class Cell:
    text: str
    kind: CellKind = "value"
    value: float | None = None  # the number behind the text, for bars and sorting
    title: str = ""  # the longer story, shown on hover
    official: bool = True
    parts: list[str] = field(default_factory=list)  # one text per main metric (HTML stacks them)
    interval: str = ""  # the 95% bootstrap interval of the value, "[low, high]", where known
    generated: bool = False  # a prompted LM's score from generated answers (GENERATED_MARK)


@dataclass
class Line:
    rank: str
    model: str
    family: str
    protocol: str
    official: bool
    score: Cell
    tasks: list[Cell]
    reference: bool = False
    mode: str = "official"
    versus_next: str = ""  # the paired test against the next ranked line: "+1.23 (p=0.004) *"


@dataclass
class Leaderboard:
    tasks: list[TaskInfo]
    headers: list[str]  # one per task: "NER (entity macro F1 / character macro F1)"
    lines: list[Line]
    notes: list[str] = field(default_factory=list)
    intervals: Intervals | None = None
    llm_runs: LlmRunsTable | None = None  # how the prompted LMs were run, where the report has any
    contamination: CleanTable | None = None  # scores on the clean subset of a contamination scan, where given


def _task_cell(entry: Entry, info: TaskInfo, intervals: Intervals | None = None) -> Cell:
    row = entry.rows.get(info.name)
    if row is None and info.name in entry.not_applicable:
        return Cell("not applicable", "missing", title=f"{entry.model_family} models do not apply to {info.title}: "
                    f"{entry.not_applicable[info.name]}")
    if row is None:
        error = entry.failed_tasks.get(info.name)
        if error:
            return Cell("failed", "failed", title=error)
        return Cell("—", "missing", title="not run")
    excluded = row.not_applicable_metrics
    stats = [row.metric(m) for m in info.main_metrics]
    parts = [NOT_APPLICABLE if m in excluded else s.format() if s else "?" for m, s in zip(info.main_metrics, stats)]
    text = " / ".join(parts)
    score = entry.task_scores.get(info.name)
    seeds = ", ".join(map(str, row.seeds))
    title = (f"{info.title}: {' / '.join(metric_label(m) for m in info.main_metrics)}, mean ± sample std "
             f"over seeds {seeds}; protocol {row.protocol}: {row.protocol_description}")
    if any(m in excluded for m in info.main_metrics):
        title += (f"; {', '.join(metric_label(m) for m in info.main_metrics if m in excluded)} not applicable to "
                  f"these runs: the task score is {' / '.join(metric_label(m) for m in row.counted_metrics(info.main_metrics))}")
    is_generated = generated(row)
    if is_generated:
        title += f"; {GENERATED_MARK} scored from generated answers (see how the prompted LMs were run)"
        text += GENERATED_MARK
    if info.name in entry.other_protocols:
        title += f" (also run under {', '.join(entry.other_protocols[info.name])}: see the task section)"
    if row.failures:
        title += f"; failed seeds: {', '.join(str(r.seed) for _, r in row.failures)}"
    if not row.protocol_official:
        text += NOT_OFFICIAL_MARK
    found = intervals.of(row) if intervals is not None else None
    shown = interval_text(found.task_estimate) if found is not None else ""
    if shown:
        title += f"; task score {score.mean:.2f}, 95% bootstrap interval {shown}" if score else ""
    return Cell(text, "value", score.mean if score else None, title, row.protocol_official, parts, shown,
                is_generated)


def _score_cell(entry: Entry, intervals: Intervals | None = None) -> Cell:
    found = intervals.klue_scores.get((entry.model, entry.metric_mode)) if intervals is not None else None
    shown = interval_text(found)
    if entry.klue_score is not None:
        official = entry.official
        title = f"mean of the {entry.n_tasks} task scores" + ("" if official else
                                                               "; includes non-official protocols")
        if shown:
            title += f"; 95% bootstrap interval {shown}"
        return Cell(f"{entry.klue_score:.2f}" + ("" if official else NOT_OFFICIAL_MARK), "value",
                    entry.klue_score, title, official, interval=shown)
    if entry.not_applicable and entry.partial_score is not None:
        what = (f"mean of the {entry.n_applicable} applicable" if entry.applicable_complete
                else f"partial {entry.n_scored}/{entry.n_applicable} applicable")
        return Cell(f"{entry.partial_score:.2f} ({what})", "partial", entry.partial_score,
                    f"{what}: the mean over the tasks {entry.model_family} models apply to, not a KLUE score "
                    f"({len(entry.not_applicable)} of {entry.n_tasks} tasks are not applicable)", entry.official,
                    interval=shown)
    if entry.partial_score is not None:
        return Cell(f"{entry.partial_score:.2f} (partial {entry.n_scored}/{entry.n_tasks})", "partial",
                    entry.partial_score,
                    f"partial: mean over {entry.n_scored} of {entry.n_tasks} tasks, not a KLUE score",
                    entry.official, interval=shown)
    return Cell("—", "missing", title="no task succeeded")


def _protocol_text(entry: Entry) -> str:
    protocols = sorted({r.protocol for r in entry.rows.values()}, key=lambda p: (p != "official", p))
    return ", ".join(protocols) if protocols else "—"


def build_leaderboard(agg: Aggregate, n_resamples: int = REPORT_RESAMPLES, seed: int = 0,
                      scan: Scan | None = None) -> Leaderboard:
    """The leaderboard of `agg`, with 95% bootstrap intervals and neighbour tests from `n_resamples`
    resamples of the runs' stored statistics (0: none); with `scan`, each row's score on its clean subset."""
    intervals = compute_intervals(agg, n_resamples, seed) if n_resamples else None
    tasks = list(agg.tasks.values())
    headers = [f"{task_label(t)} ({' / '.join(metric_label(m) for m in t.main_metrics)})" for t in tasks]
    lines = []
    for i, entry in enumerate(agg.entries, start=1):
        rank = str(i) if entry.klue_score is not None else ""
        test = intervals.entry_tests.get((entry.model, entry.metric_mode)) if intervals is not None else None
        lines.append(Line(rank, entry.model, entry.model_family, _protocol_text(entry), entry.official,
                          _score_cell(entry, intervals), [_task_cell(entry, t, intervals) for t in tasks],
                          mode=entry.metric_mode, versus_next="" if test is None else test.text()))
    for ref in agg.references:
        cells = []
        for t in tasks:
            scores = ref.scores.get(t.name, {})
            values = [scores.get(m) for m in t.main_metrics]
            parts = ["?" if v is None else f"{v:.2f}" for v in values]
            cells.append(Cell(" / ".join(parts), "reference", agg.reference_task_score(ref, t.name), ref.source,
                              parts=parts))
        total = agg.reference_klue_score(ref)
        score = Cell("—" if total is None else f"{total:.2f}", "reference", total,
                     "mean of the paper's task scores, computed here the same way")
        lines.append(Line("", f"{ref.model} (paper)", "reference", "official", True, score, cells,
                          reference=True))
    notes = [
        ("Values: mean ± sample standard deviation over seeds, 0-100. A task score is the mean of the task's "
        "main metrics; the KLUE score is the mean of the task scores over all "
        f"{len(tasks)} tasks (a model missing a task gets only a partial score, unranked)."),
        (f"{NOT_OFFICIAL_MARK} not the official protocol (trained or evaluated on a local split): not "
        "comparable with the paper."),
        f"Reference: {'; '.join(r.model + ' — ' + r.source for r in agg.references)}.",
    ]
    if any(entry.not_applicable for entry in agg.entries):
        notes.append("not applicable: the model's family does not apply to the task (a sentence embedding is one "
                     "vector per text: no per-token, span or dialogue-state output); such a model's score is the "
                     "mean over the tasks it applies to, not a KLUE score, and it is not ranked.")
    notes += _llm_notes(agg)
    if intervals is not None and (intervals.klue_scores or intervals.rows):
        notes.append(
            f"[low, high]: 95% bootstrap interval of the KLUE score, or after a task's metrics of its task score "
            f"({intervals.n_resamples} resamples of the evaluation examples, grouped as they belong together, "
            "seeds combined; seed "
            f"{intervals.seed}). vs next: the difference from the next ranked model and the p-value of a paired "
            f"bootstrap on the same examples; * marks p < 0.05. `klue compare` tests two models metric by metric.")
    if intervals is not None and intervals.without_statistics:
        notes.append(f"{len(intervals.without_statistics)} run(s) have no per-example statistics (scored before "
                     "klue kept them): their rows show no interval.")
    contamination = None
    if scan is not None:
        from klue.reporting.contamination import build_clean_table

        contamination = build_clean_table(agg, scan, n_resamples, seed)
    return Leaderboard(tasks, headers, lines, notes, intervals, build_llm_runs(agg), contamination)


def _llm_notes(agg: Aggregate) -> list[str]:
    """The leaderboard's notes on generated scores and on main metrics declared not applicable."""
    used: list[Row] = [row for entry in agg.entries for row in entry.rows.values()]
    notes = []
    if any(generated(row) for row in used):
        notes.append(f"{GENERATED_MARK} a prompted LM's score from generated answers, parsed (an answer that does "
                     f"not parse is scored wrong), not from log-likelihoods: see \"{LLM_RUNS_TITLE}\" "
                     "for its mode, shots, parse failures and what was cut.")
    excluded: dict[str, list[str]] = {}
    for row in used:
        info = agg.tasks[row.task]
        for m in info.main_metrics:
            if m in row.not_applicable_metrics and metric_label(m) not in excluded.setdefault(info.label, []):
                excluded[info.label].append(metric_label(m))
    if excluded:
        said = "; ".join(f"{task} {', '.join(labels)}" for task, labels in excluded.items())
        notes.append(f"{NOT_APPLICABLE}: not applicable, a main metric the row's runs declared they cannot measure "
                     f"({said}: a generated answer carries no probabilities to rank by); the task score is the mean "
                     "of the task's other main metrics, and counts in the KLUE score.")
    return notes


_MD_PUNCTUATION = "\\`*_[]|~"  # emphasis, code, links, tables, strikethrough


def md_html(text: str) -> str:
    """HTML markup shown, not rendered (a model name such as `<img src=x onerror=...>` is user input)."""
    return " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def md_text(text: str) -> str:
    """`text` as literal Markdown: HTML escaped (md_html) and Markdown punctuation too."""
    text = md_html(text)
    return "".join(f"\\{c}" if c in _MD_PUNCTUATION else c for c in text)


def _with_interval(cell: Cell) -> str:
    return f"{cell.text} {cell.interval}" if cell.interval else cell.text


def to_markdown(board: Leaderboard) -> str:
    tests = any(line.versus_next for line in board.lines)
    head = ["#", "Model", "Protocol", "KLUE score", *board.headers] + (["vs next"] if tests else [])
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---", "---", "---", "---:"] +
                                                           ["---:"] * (len(head) - 4)) + "|"]
    for line in board.lines:
        model = f"*{md_text(line.model)}*" if line.reference else f"**{md_text(line.model)}**"
        if line.mode != "official":
            model += f" ({md_text(line.mode)} metrics)"
        cells = [md_text(line.rank), model, md_text(line.protocol), md_text(_with_interval(line.score)),
                 *[md_text(_with_interval(c)) for c in line.tasks]] + ([md_text(line.versus_next)] if tests else [])
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out += [f"- {md_html(note)}" for note in board.notes]  # our prose, with code spans; may quote names
    if board.llm_runs is not None:
        out += ["", *llm_runs_markdown(board.llm_runs)]
    if board.contamination is not None:
        out += ["", *clean_markdown(board.contamination)]
    return "\n".join(out) + "\n"


def llm_runs_markdown(table: LlmRunsTable) -> list[str]:
    """The Markdown lines of the table (a section of `to_markdown`)."""
    out = [f"## {LLM_RUNS_TITLE}", "", "| " + " | ".join(table.headers) + " |",
           "|" + "|".join("---" for _ in table.headers) + "|"]
    out += ["| " + " | ".join(md_text(c) for c in line.cells) + " |" for line in table.lines]
    out.append("")
    out += [f"- {md_html(note)}" for note in table.notes]
    return out


def clean_markdown(table: CleanTable) -> list[str]:
    """The Markdown lines of the clean-subset table (klue.reporting.contamination; a section of `to_markdown`)."""
    from klue.reporting.contamination import CONTAMINATION_TITLE

    out = [f"## {CONTAMINATION_TITLE}", "", "| " + " | ".join(table.headers) + " |",
           "|" + "|".join(["---"] * 3 + ["---:"] * (len(table.headers) - 3)) + "|"]
    out += ["| " + " | ".join(md_text(c) for c in line.cells()) + " |" for line in table.lines]
    out.append("")
    out += [f"- {md_html(note)}" for note in table.notes]
    return out


_RICH_NOTE = "Task columns: task score (mean of the main metrics); `klue report --format md` shows each metric."


def to_rich(board: Leaderboard) -> object:
    """A compact `rich.table.Table`: one task score per task (the Markdown and HTML show each metric)."""
    from rich.markup import escape
    from rich.table import Table

    marked = [n for n in board.notes if n.startswith((GENERATED_MARK, NOT_APPLICABLE))]
    table = Table(title="KLUE leaderboard (dev)", caption_justify="left", header_style="bold",
                  caption="\n".join([*board.notes[:2], *marked, _RICH_NOTE]))
    table.add_column("#", justify="right", style="dim")
    table.add_column("Model", style="bold", min_width=14)
    table.add_column("KLUE", justify="right", no_wrap=True)
    for t in board.tasks:
        table.add_column(task_label(t), justify="right", no_wrap=True)
    styles = {"failed": "red", "missing": "dim", "partial": "italic", "reference": "italic"}

    def show(cell: Cell) -> str:
        if cell.kind in ("failed", "missing", "partial"):
            text = cell.text
        else:
            text = "?" if cell.value is None else f"{cell.value:.2f}"
            text += "" if cell.official or cell.kind == "reference" else NOT_OFFICIAL_MARK
            text += GENERATED_MARK if cell.generated else ""
        return f"[{styles[cell.kind]}]{escape(text)}[/]" if cell.kind in styles else escape(text)

    for line in board.lines:
        protocols = line.protocol.split(", ")
        shown = protocols[0] if len(protocols) == 1 else f"{len(protocols)} protocols (see the report)"
        model = f"{escape(line.model)}\n[dim]{escape(shown)}[/dim]"
        score = show(line.score) + (f"\n[dim]{escape(line.score.interval)}[/dim]" if line.score.interval else "")
        table.add_row(line.rank, model, score, *[show(c) for c in line.tasks],
                      style="dim" if line.reference else None)
    return table


def print_rich(board: Leaderboard) -> None:
    """Print to stdout: fitted to a terminal, unwrapped in a log or a pipe (klue.io.console). Where no
    terminal reads it, the LLM table (11 columns, hundreds of characters a line) is a list instead."""
    from klue.io.console import make_console

    console = make_console()
    console.print(to_rich(board))
    if board.llm_runs is None:
        return
    if console.is_terminal:
        console.print(llm_runs_rich(board.llm_runs))
    else:
        console.print("\n".join(llm_runs_list(board.llm_runs)), markup=False, highlight=False)


def llm_runs_list(table: LlmRunsTable) -> list[str]:
    """The table as a list a log reader reads: a line per run (task · model), then one line per column."""
    out = [LLM_RUNS_TITLE]
    for line in table.lines:
        task, model, *rest = line.cells
        out.append(f"- {task} · {model}")
        out += [f"    {header}: {cell}" for header, cell in zip(table.headers[2:], rest, strict=True)]
    out += [f"  {note}" for note in table.notes]
    return out


def llm_runs_rich(table: LlmRunsTable) -> object:
    """The table as a `rich.table.Table` (every column: the terminal wraps the long ones)."""
    from rich.markup import escape
    from rich.table import Table

    out = Table(title=LLM_RUNS_TITLE, caption_justify="left", header_style="bold",
                caption="\n".join(table.notes))
    for header in table.headers:
        out.add_column(header, overflow="fold")
    for line in table.lines:
        out.add_row(*(escape(c) for c in line.cells))
    return out
