"""Scores on the clean subset (`klue report DIR --contamination SCAN`, docs/contamination.md): for each row of a
benchmark, its task score on the examples a `klue contamination scan` found clean, with its 95% bootstrap
interval, beside the score on every example, and whether the two differ.

- Clean: an example whose guid the scan marks not dirty, by its input (`dirty_input`, the default) or by its
  input with its answer (`dirty_with_answer`). A row evaluated on examples the scan did not cover gets no
  clean score (its cleanliness is unknown), and says how many.
- Interval and test: the row's runs (seeds combined) resampled as `klue.reporting.intervals` resamples them,
  by the task's units (what belongs together stays together); under each resample the full score and the
  clean score (the same draw, dirty examples weighing nothing) are computed, so the difference clean - full
  has a paired bootstrap interval and p-value (`klue.reporting.intervals.paired_test`). The rows differ when
  p < 0.05.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from klue.errors import DataError, ProblemLog
from klue.io.text import jsonl_objects, read_text
from klue.metrics.resampling import LEVEL, Estimate, Side, Units, bootstrap, interval
from klue.metrics.statistics import ExampleStatistics
from klue.reporting.aggregate import Aggregate, Row
from klue.reporting.intervals import REPORT_RESAMPLES, Test, interval_text, paired_test, row_statistics
from klue.results import RunStatistics

CONTAMINATION_TITLE = "Scores on the clean subset (contamination)"
EXAMPLES_FILE = "examples.jsonl"  # SCAN/TASK/examples.jsonl, one object per example (klue contamination scan)
SUMMARY_FILE = "summary.json"
DIRTINESS = {"input": "dirty_input", "with_answer": "dirty_with_answer"}  # --contamination-by -> field


@dataclass(frozen=True)
class Scan:
    """What the report needs of a scan: per task, which guids are dirty by the chosen field."""

    root: Path
    by: str  # "input" or "with_answer"
    dirty: dict[str, dict[str, bool]]  # task -> guid -> dirty
    about: str  # one line on the scan (corpora, unit, n) from its summary, where it says


def read_scan(root: Path, by: str = "input") -> Scan:
    """SCAN/TASK/examples.jsonl of every task directory under `root`; DataError naming the file and line of
    anything that is not a scan's output."""
    if by not in DIRTINESS:
        raise DataError(f"--contamination-by takes {' or '.join(DIRTINESS)}, not {by!r}")
    if not root.is_dir():
        raise DataError("not a directory (give the --out directory of `klue contamination scan`)", root)
    key = DIRTINESS[by]
    dirty: dict[str, dict[str, bool]] = {}
    for path in sorted(root.glob(f"*/{EXAMPLES_FILE}")):
        log = ProblemLog(str(path))
        text = read_text(path, log)
        marks: dict[str, bool] = {}
        for number, obj in jsonl_objects((text or "").splitlines(), log, "guid"):
            if not isinstance(obj.get(key), bool):
                log.error(f"line {number}", f"expected a true/false `{key}`")
                continue
            marks[obj["guid"]] = obj[key]
        log.raise_if_errors()
        dirty[path.parent.name] = marks
    if not dirty:
        raise DataError(f"no TASK/{EXAMPLES_FILE} under it: not the output of `klue contamination scan`", root)
    return Scan(root, by, dirty, _about(root / SUMMARY_FILE))


def _about(path: Path) -> str:
    """The scan's settings in a few words, from its summary.json where it has one (what the report quotes)."""
    if not path.is_file():
        return ""
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"cannot read the scan's summary: {error}", path) from None
    if not isinstance(summary, dict):
        return ""
    parts = []
    corpus = summary.get("corpus")
    if isinstance(corpus, list) and corpus:
        paths = [str(c.get("path", "?")) if isinstance(c, dict) else str(c) for c in corpus]
        parts.append("corpus " + ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else ""))
    given = summary.get("settings")
    given = given if isinstance(given, dict) else {}
    settings = [f"{k} {given[k]}" for k in ("unit", "n", "normalise") if isinstance(given.get(k), str | int)]
    return "; ".join(parts + settings)


@dataclass(frozen=True)
class CleanLine:
    task: str  # the task's label
    model: str
    protocol: str
    mode: str
    row: Row
    n: int  # examples the row was evaluated on
    n_clean: int
    full: Estimate | None
    clean: Estimate | None
    test: Test | None  # clean - full
    note: str = ""  # why a part is missing

    @property
    def differs(self) -> str:
        if self.test is None:
            return ""
        return "yes" if self.test.significant else "no"

    def cells(self) -> list[str]:
        full = "" if self.full is None else f"{self.full.value:.2f} {interval_text(self.full)}".strip()
        clean = "" if self.clean is None else f"{self.clean.value:.2f} {interval_text(self.clean)}".strip()
        test = "" if self.test is None else (f"{self.test.difference:+.2f} [{self.test.low:.2f}, {self.test.high:.2f}] "
                                             f"{'p<0.001' if self.test.p_value < 0.001 else f'p={self.test.p_value:.3f}'}")
        model = self.model + (f" ({self.mode} metrics)" if self.mode != "official" else "")
        return [self.task, model, self.protocol, f"{self.n_clean}/{self.n}", full, clean or self.note, test,
                self.differs]


@dataclass
class CleanTable:
    headers: list[str]
    lines: list[CleanLine]
    notes: list[str] = field(default_factory=list)


HEADERS = ["Task", "Model", "Protocol", "clean / all", "Task score, all [95%]", "Clean subset [95%]",
           "Clean - all [95%], p", "Differ"]


def _loaded(row: Row) -> list[RunStatistics] | None:
    """The row's runs' per-example statistics, or None where one has none (scored before klue kept them) or
    where its runs scored different examples."""
    out = row_statistics(row)
    return out if out and all(s.guids == out[0].guids for s in out) else None


def _task_values(values: dict[str, np.ndarray], counted: tuple[str, ...]) -> np.ndarray | None:
    """The task score (the mean of the row's counted main metrics) under each resample."""
    if not counted or not all(m in values for m in counted):
        return None
    return np.asarray(np.mean([values[m] for m in counted], axis=0))


def clean_line(agg: Aggregate, row: Row, scan: Scan, n_resamples: int, seed: int) -> CleanLine:
    """One row's full and clean task scores with their intervals, and the paired test of the difference."""
    info = agg.tasks[row.task]
    common = (info.label, row.model, row.protocol, row.metric_mode, row)
    loaded = _loaded(row)
    if loaded is None:
        return CleanLine(*common, 0, 0, None, None, None, "no per-example statistics (scored before klue kept them)")
    guids = loaded[0].guids
    marks = scan.dirty[row.task]
    unknown = sum(g not in marks for g in guids)
    if unknown:
        return CleanLine(*common, len(guids), 0, None, None, None,
                         f"{unknown} of its {len(guids)} examples are not in the scan")
    clean = np.array([not marks[g] for g in guids])
    counted = row.counted_metrics(info.main_metrics)
    units = Units.of(loaded[0].units.tolist())
    full_side = Side([s.statistics for s in loaded], units)
    if not clean.any():
        return CleanLine(*common, len(guids), 0, _estimate(full_side, counted, n_resamples, seed), None, None,
                         "every example is dirty")
    # The clean side keeps the full set's unit numbers, so one draw of units weighs both sides alike; a unit
    # holding no clean example adds nothing to the clean score.
    clean_units = Units(units.index[clean], units.n_units)
    clean_side = Side([ExampleStatistics(s.statistics.columns, s.statistics.matrix[clean], s.statistics.formulas)
                       for s in loaded], clean_units)
    full_total = _task_values({k: np.array([v]) for k, v in full_side.totals().items()}, counted)
    clean_total = _task_values({k: np.array([v]) for k, v in clean_side.totals().items()}, counted)
    if full_total is None or clean_total is None:
        return CleanLine(*common, len(guids), int(clean.sum()), None, None, None, "no task score")
    full_value, clean_value = float(full_total[0]), float(clean_total[0])
    if n_resamples < 1:
        return CleanLine(*common, len(guids), int(clean.sum()), Estimate(full_value, np.nan, np.nan),
                         Estimate(clean_value, np.nan, np.nan), None)
    with np.errstate(invalid="ignore", divide="ignore"):  # a resample drawing no clean unit: NaN, left out
        full_values, clean_values = bootstrap([full_side, clean_side], n_resamples, seed)
    a, b = _task_values(clean_values, counted), _task_values(full_values, counted)
    assert a is not None and b is not None  # the totals had every counted metric
    return CleanLine(*common, len(guids), int(clean.sum()), Estimate(full_value, *interval(b, LEVEL)),
                     Estimate(clean_value, *interval(a, LEVEL)), paired_test(a, b, clean_value - full_value))


def _estimate(side: Side, counted: tuple[str, ...], n_resamples: int, seed: int) -> Estimate | None:
    total = _task_values({k: np.array([v]) for k, v in side.totals().items()}, counted)
    if total is None:
        return None
    if n_resamples < 1:
        return Estimate(float(total[0]), np.nan, np.nan)
    values = _task_values(bootstrap([side], n_resamples, seed)[0], counted)
    assert values is not None
    return Estimate(float(total[0]), *interval(values, LEVEL))


def build_clean_table(agg: Aggregate, scan: Scan, n_resamples: int = REPORT_RESAMPLES, seed: int = 0) -> CleanTable:
    """A line per row of every task the scan covers, in the task sections' order."""
    from klue.io.threads import single_threaded_numerics

    lines = []
    with single_threaded_numerics():  # the same intervals for any thread count (klue.io.threads)
        for task in agg.tasks:
            if task not in scan.dirty:
                continue
            lines += [clean_line(agg, row, scan, n_resamples, seed) for row in agg.rows_for(task)]
    which = "its input" if scan.by == "input" else "its input with its answer"
    notes = [(f"Clean: an example the scan {scan.root} did not find in the corpus by {which} "
             f"(`{DIRTINESS[scan.by]}`){'; ' + scan.about if scan.about else ''}."),
             (f"Intervals: {n_resamples} bootstrap resamples of the evaluation examples, grouped as they belong "
             f"together, seeds combined (seed {seed}); the clean score under each resample from the same draw, so "
             "clean - all is a paired difference. Differ: p < 0.05."),
             ("A clean score lower than the full one suggests the model gains on the examples the corpus holds; "
             "a small clean subset gives a wide interval.")]
    skipped = sorted({r.task for r in agg.rows} - set(scan.dirty))
    if skipped:
        notes.append(f"Not scanned: {', '.join(agg.tasks[t].label for t in skipped)} (no SCAN/TASK/{EXAMPLES_FILE}).")
    return CleanTable(list(HEADERS), lines, notes)
