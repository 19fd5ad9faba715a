"""From a directory of `results.json` files to rows, statistics over seeds and the leaderboard.

Definitions (docs/results-schema.md repeats them for readers of the report):

- A **row** is one (task, model, protocol, metric mode): the runs that differ only by seed.
- Per metric, a row reports the **mean over seeds** and the **sample standard deviation** (ddof=1);
  with one seed there is no standard deviation.
- A **task score** is, for each seed, the mean of the task's `main_metrics` (docs/tasks.md: e.g. NER =
  mean of entity_macro_f1 and character_macro_f1), then the mean (and std) of those over seeds. A main
  metric the row's runs declare **not applicable** (`Results.not_applicable_metrics`: an AUPRC from
  generated answers, which carry no probabilities) is left out: the task score is the mean of the others.
- The **KLUE score** of a model is the unweighted mean of its task scores over every registered task.
  A model without an ok row for some task gets no KLUE score; the report shows a **partial** score
  (mean over the tasks it has, marked "partial k/8") and never ranks it with complete ones.
- A task a model family does not apply to (a sentence-embedding model on a task of per-token, span or
  dialogue-state outputs) is **not applicable** to that family's models: such a model's score is the mean
  of its task scores over the tasks it applies to, never a KLUE score, and it is not ranked.
- When a model has rows under several protocols for one task, the leaderboard uses the `official` one
  if there is one, else the protocol with the most seeds (then by name); the others stay in the task
  sections. A score mixing any non-official protocol is marked as not comparable with the paper.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from klue.benchmark.cells import AUTO_PROTOCOL
from klue.benchmark.manifest import Manifest, read_manifest
from klue.errors import DataError
from klue.metrics.report import ConfusionMatrix
from klue.results import RESULTS_FILE, Results, read_results
from klue.tasks.base import REFERENCE_SOURCES, Task


@dataclass(frozen=True)
class TaskInfo:
    """What the report needs of a task; built from the registry's `Task`."""

    name: str
    title: str
    order: int
    metrics: tuple[str, ...]
    main_metrics: tuple[str, ...]
    labels: tuple[str, ...]
    official_blobs: Mapping[str, str]  # git blob id -> official path (to recognise official files)
    label: str = ""  # how tables write the task ("NER", "WoS"); default: the name in capitals
    reference_scores: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # model -> metric -> score
    not_applicable: Mapping[str, str] = field(default_factory=dict)  # model family -> why the task is not for it

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.name.upper())

    @classmethod
    def from_task(cls, task: Task[Any, Any]) -> TaskInfo:
        from klue.families import FALLBACK, FAMILIES

        not_applicable = {f.name: why for f in (*FAMILIES, FALLBACK) if (why := f.not_applicable(task)) is not None}
        return cls(task.name, task.title, task.order, tuple(task.metrics), tuple(task.main_metrics),
                   tuple(task.labels), {f.git_blob: f.path for f in task.files}, task.label,
                   task.reference_scores, not_applicable)


def task_catalog() -> dict[str, TaskInfo]:
    """Every registered task, in the paper's order."""
    from klue import registry

    return {t.name: TaskInfo.from_task(t) for t in registry.all_tasks()}


@dataclass(frozen=True)
class ReferenceRow:
    """Published numbers shown beside measured rows, always marked as reference: measured by their authors
    on the official dev sets with the official train sets, so they compare only with `official` rows."""

    model: str
    source: str
    scores: dict[str, dict[str, float]]  # task name -> metric name -> score (0-100)


def references_of(tasks: Mapping[str, TaskInfo]) -> tuple[ReferenceRow, ...]:
    """One reference row per model that the tasks' declarations give published scores for."""
    by_model: dict[str, dict[str, dict[str, float]]] = {}
    for info in tasks.values():
        for model, scores in info.reference_scores.items():
            by_model.setdefault(model, {})[info.name] = dict(scores)
    return tuple(ReferenceRow(model, REFERENCE_SOURCES.get(model, "published"), scores)
                 for model, scores in by_model.items())


@dataclass(frozen=True)
class Stat:
    """A value over seeds: mean, sample std (None with one seed) and the values themselves."""

    mean: float
    std: float | None
    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Iterable[float]) -> Stat:
        vals = tuple(float(v) for v in values)
        if not vals:
            raise ValueError("a statistic needs at least one value")
        std = statistics.stdev(vals) if len(vals) > 1 else None
        return cls(statistics.fmean(vals), std, vals)

    @property
    def n(self) -> int:
        return len(self.values)

    def format(self, digits: int = 2) -> str:
        if self.std is None:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {self.std:.{digits}f}"


@dataclass(frozen=True)
class SummedConfusion:
    """A row's confusion matrix: the counts of `n_runs` seeds added up."""

    matrix: ConfusionMatrix
    n_runs: int


@dataclass
class Row:
    """One (task, model, protocol, metric mode) and its ok runs, one per seed."""

    task: str
    model: str
    model_family: str
    protocol: str
    protocol_official: bool
    protocol_description: str
    metric_mode: str
    runs: list[tuple[Path, Results]] = field(default_factory=list)
    failures: list[tuple[Path, Results]] = field(default_factory=list)

    @property
    def seeds(self) -> list[int]:
        return [r.seed for _, r in self.runs]

    @property
    def ok(self) -> bool:
        return bool(self.runs)

    @property
    def partial(self) -> bool:
        """Some run scored only part of the evaluation set (`klue llm --limit`)."""
        return any(r.partial for _, r in self.runs)

    def metric(self, name: str) -> Stat | None:
        values = [r.scores[name] for _, r in self.runs if name in r.scores]
        return Stat.of(values) if values else None

    def metric_names(self) -> list[str]:
        names: dict[str, None] = {}
        for _, r in self.runs:
            names.update(dict.fromkeys(r.scores))
        return list(names)

    def breakdown(self, name: str) -> dict[str, Stat]:
        values: dict[str, list[float]] = defaultdict(list)
        for _, r in self.runs:
            for key, value in r.breakdown.get(name, {}).items():
                values[key].append(value)
        return {k: Stat.of(v) for k, v in values.items()}

    def breakdown_names(self) -> list[str]:
        names: dict[str, None] = {}
        for _, r in self.runs:
            names.update(dict.fromkeys(r.breakdown))
        return list(names)

    def confusion(self) -> SummedConfusion | None:
        """Counts summed over seeds (labels in first-seen order, so differing label sets still add)."""
        matrices = [r.confusion for _, r in self.runs if r.confusion]
        if not matrices:
            return None
        labels: list[str] = []
        for m in matrices:
            labels += [x for x in m.labels if x not in labels]
        index = {x: i for i, x in enumerate(labels)}
        counts = [[0] * len(labels) for _ in labels]
        for m in matrices:
            for gold, row in zip(m.labels, m.counts):
                for pred, count in zip(m.labels, row):
                    counts[index[gold]][index[pred]] += count
        return SummedConfusion(ConfusionMatrix(tuple(labels), tuple(map(tuple, counts))), len(matrices))

    @property
    def not_applicable_metrics(self) -> tuple[str, ...]:
        """The metrics some run of the row declared it cannot measure (`Results.not_applicable_metrics`)."""
        return tuple(dict.fromkeys(m for _, r in self.runs for m in r.not_applicable_metrics))

    def counted_metrics(self, main_metrics: Sequence[str]) -> tuple[str, ...]:
        """The main metrics the row's task score counts: all but those declared not applicable."""
        excluded = set(self.not_applicable_metrics)
        return tuple(m for m in main_metrics if m not in excluded)

    def task_score(self, main_metrics: Sequence[str]) -> Stat | None:
        """Per seed the mean of the counted main metrics (`counted_metrics`), then over seeds; None if one of
        them is missing, or none is counted."""
        counted = self.counted_metrics(main_metrics)
        if not counted:
            return None
        per_seed = []
        for _, r in self.runs:
            if not all(m in r.scores for m in counted):
                return None
            per_seed.append(statistics.fmean(r.scores[m] for m in counted))
        return Stat.of(per_seed) if per_seed else None


@dataclass
class Entry:
    """One leaderboard line: a model under one metric mode, with the row it uses for each task."""

    model: str
    model_family: str
    metric_mode: str
    rows: dict[str, Row]  # task -> the row the leaderboard uses
    task_scores: dict[str, Stat]
    other_protocols: dict[str, list[str]]  # task -> protocols left to the task sections
    failed_tasks: dict[str, str]  # task -> error, where no seed of the task succeeded
    n_tasks: int  # number of registered tasks
    not_applicable: dict[str, str] = field(default_factory=dict)  # task -> why the model's family does not apply

    @property
    def n_scored(self) -> int:
        return len(self.task_scores)

    @property
    def complete(self) -> bool:
        """Every task scored on its whole evaluation set: a `--limit` row never makes a ranked score."""
        return self.n_scored == self.n_tasks and not any(row.partial for row in self.rows.values())

    @property
    def n_applicable(self) -> int:
        return self.n_tasks - len(self.not_applicable)

    @property
    def applicable_complete(self) -> bool:
        """A family that some tasks are not for: every task it applies to scored on its whole evaluation set."""
        return (bool(self.not_applicable) and self.n_scored == self.n_applicable
                and not any(row.partial for row in self.rows.values()))

    @property
    def official(self) -> bool:
        return all(row.protocol_official for row in self.rows.values())

    @property
    def klue_score(self) -> float | None:
        """Mean of the task scores over every task; None unless the model has all of them."""
        return self.partial_score if self.complete else None

    @property
    def partial_score(self) -> float | None:
        if not self.task_scores:
            return None
        return statistics.fmean(s.mean for s in self.task_scores.values())


@dataclass
class Aggregate:
    root: Path
    tasks: dict[str, TaskInfo]
    rows: list[Row]
    failures: list[tuple[Path, Results]]  # every failed run
    entries: list[Entry]
    references: tuple[ReferenceRow, ...]
    manifest: Manifest | None  # the benchmark.json of the directory, when it has one

    @property
    def results(self) -> list[tuple[Path, Results]]:
        out = [pr for row in self.rows for pr in row.runs] + self.failures
        return sorted(out, key=lambda pr: str(pr[0]))

    def rows_for(self, task: str) -> list[Row]:
        return [r for r in self.rows if r.task == task]

    def reference_task_score(self, reference: ReferenceRow, task: str) -> float | None:
        info = self.tasks[task]
        scores = reference.scores.get(task, {})
        if not all(m in scores for m in info.main_metrics):
            return None
        return statistics.fmean(scores[m] for m in info.main_metrics)

    def reference_klue_score(self, reference: ReferenceRow) -> float | None:
        values = [v for t in self.tasks if (v := self.reference_task_score(reference, t)) is not None]
        return statistics.fmean(values) if len(values) == len(self.tasks) else None


def load_results(root: Path) -> list[tuple[Path, Results]]:
    """Every `results.json` under `root` (validated; a bad file is a DataError naming it)."""
    if not root.is_dir():
        raise DataError(f"{root} is not a directory of benchmark results", root)
    found = [(p, read_results(p)) for p in sorted(root.rglob(RESULTS_FILE))]
    if not found:
        raise DataError(f"no {RESULTS_FILE} under {root}; run `klue benchmark --out {root}` first", root)
    return found


def _choose_row(rows: list[Row]) -> Row:
    return min(rows, key=lambda r: (not r.protocol_official, -len(r.runs), r.protocol))


def aggregate(results: Sequence[tuple[Path, Results]], tasks: Mapping[str, TaskInfo], root: Path = Path("."),
              manifest: Manifest | None = None,
              references: tuple[ReferenceRow, ...] | None = None) -> Aggregate:
    unknown = sorted({r.task for _, r in results} - set(tasks))
    if unknown:
        raise DataError(f"results for tasks this klue does not know: {unknown}; known: {list(tasks)}", root)
    order = {name: i for i, name in enumerate(tasks)}
    groups: dict[tuple[str, str, str, str], Row] = {}
    failures: list[tuple[Path, Results]] = []
    for path, r in results:
        if r.status != "ok":
            failures.append((path, r))
            continue
        key = (r.task, r.model, r.protocol, r.metric_mode)
        row = groups.setdefault(key, Row(r.task, r.model, r.model_family, r.protocol, r.protocol_official,
                                         r.protocol_description, r.metric_mode))
        row.runs.append((path, r))
    rows = sorted(groups.values(), key=lambda w: (order[w.task], w.model, w.protocol, w.metric_mode))
    for row in rows:
        row.runs.sort(key=lambda pr: pr[1].seed)
    for path, r in failures:  # a failed seed of a row that has ok seeds is shown with that row
        for row in rows:
            if (row.task, row.model, row.metric_mode) == (r.task, r.model, r.metric_mode) and (
                    r.protocol in (row.protocol, AUTO_PROTOCOL)):
                row.failures.append((path, r))
                break
    entries = _entries(rows, failures, tasks)
    references = references_of(tasks) if references is None else references
    return Aggregate(root, dict(tasks), rows, failures, entries, references, manifest)


def _entries(rows: list[Row], failures: list[tuple[Path, Results]], tasks: Mapping[str, TaskInfo]) -> list[Entry]:
    by_model: dict[tuple[str, str], list[Row]] = defaultdict(list)
    families: dict[tuple[str, str], str] = {}
    for row in rows:
        by_model[(row.model, row.metric_mode)].append(row)
        families[(row.model, row.metric_mode)] = row.model_family
    failed_by_model: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for _, r in failures:
        failed_by_model[(r.model, r.metric_mode)].setdefault(r.task, r.error or "failed")
        families.setdefault((r.model, r.metric_mode), r.model_family)
    entries = []
    for key in sorted(families):
        model_rows = by_model.get(key, [])
        chosen: dict[str, Row] = {}
        others: dict[str, list[str]] = {}
        for task in tasks:
            candidates = [r for r in model_rows if r.task == task]
            if candidates:
                chosen[task] = _choose_row(candidates)
                rest = [r.protocol for r in candidates if r is not chosen[task]]
                if rest:
                    others[task] = rest
        scores = {}
        for task, row in chosen.items():
            stat = row.task_score(tasks[task].main_metrics)
            if stat is not None:
                scores[task] = stat
        failed = {t: e for t, e in failed_by_model.get(key, {}).items() if t not in chosen}
        not_for = {t: info.not_applicable[families[key]] for t, info in tasks.items()
                   if families[key] in info.not_applicable and t not in chosen}
        entries.append(Entry(key[0], families[key], key[1], chosen, scores, others, failed, len(tasks), not_for))
    return sorted(entries, key=_rank)


def _rank(entry: Entry) -> tuple[int, float, str]:
    """Complete models by KLUE score, then partial ones by their partial score, then the rest."""
    if entry.klue_score is not None:
        return (0, -entry.klue_score, entry.model)
    if entry.partial_score is not None:
        return (1, -entry.partial_score, entry.model)
    return (2, 0.0, entry.model)


def load_aggregate(root: Path, tasks: Mapping[str, TaskInfo] | None = None) -> Aggregate:
    """Read and aggregate a benchmark directory (tasks default to the registry)."""
    return aggregate(load_results(root), task_catalog() if tasks is None else tasks, root, read_manifest(root))
