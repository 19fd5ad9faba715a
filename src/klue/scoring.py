"""The one judge: a prediction file + gold records -> the official metrics, and a run's `Results`.

`klue score` calls `score_files`; every producer (a fine-tuned encoder, a CPU baseline, a prompted LM)
writes its prediction file and calls `judge`, which scores that file through the same path
(`score_predictions`) and assembles the run's `Results`, provenance included: the one place it is filled.
Nothing here imports torch or sklearn.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from klue.errors import DataError, Problem
from klue.io.atomic import write_text_atomic
from klue.io.provenance import git_revision, library_versions, utc_now
from klue.io.threads import single_threaded_numerics
from klue.metrics.classification import check_mode
from klue.metrics.report import MetricMode, MetricReport
from klue.metrics.resampling import Units
from klue.metrics.statistics import ExampleStatistics
from klue.predictions import SHOWN_GUIDS, align, name_list, read_label_list, read_predictions
from klue.protocols import ProtocolData
from klue.results import (
    DATA_WARNINGS_FILE,
    PREDICTIONS_FILE,
    RESULTS_FILE,
    STATISTICS_FILE,
    CurvePoint,
    EmbeddingSummary,
    LlmSummary,
    Results,
    RunStatistics,
    TrainingSummary,
    metric_fields,
    write_results,
    write_statistics,
)
from klue.tasks.base import OFFICIAL_READER, Task
from klue.tasks.kinds import require_labelled
from klue.tasks.reading import read


@dataclass(frozen=True)
class ScoreResult:
    """The report of one scored prediction file, with what was read and the warnings found."""

    task: str
    report: MetricReport
    gold_path: str
    predictions_path: str
    prediction_format: str  # "jsonl", "list" or "map"
    warnings: tuple[Problem, ...] = field(default_factory=tuple)
    gold_format: str = OFFICIAL_READER  # the reader the gold file was read with
    statistics: ExampleStatistics | None = None  # per-example statistics, when asked for


def evaluate(task: Task[Any, Any], golds: Sequence[Any], predictions: Sequence[Any], mode: MetricMode,
             predictions_path: str) -> MetricReport:
    """`task.evaluate`, with its complaints about single examples (wrong NER tag count, wrong DP head
    count, ...) collected over the whole file and named by guid."""
    try:
        return task.evaluate(golds, predictions, mode)
    except (DataError, ValueError) as error:
        first = error
    # Error path only: find every offending example, scoring blocks first and then each example of a
    # failing block alone (a few hundred calls instead of one per example).
    offending: list[tuple[str, str]] = []
    block = 64
    for start in range(0, len(golds), block):
        gold_block, pred_block = golds[start:start + block], predictions[start:start + block]
        if _complaint(task, gold_block, pred_block, mode) is None:
            continue
        for gold, prediction in zip(gold_block, pred_block):
            message = _complaint(task, [gold], [prediction], mode)
            if message is not None:
                offending.append((task.guid(gold), message))
    if not offending:
        if isinstance(first, DataError):
            raise first
        raise DataError(f"{task.name}: {first}", predictions_path) from first
    problems = [Problem(predictions_path, guid, message) for guid, message in offending[:SHOWN_GUIDS]]
    if len(offending) > SHOWN_GUIDS:
        problems.append(Problem(predictions_path, "", f"{len(offending)} predictions in all are unusable: "
                                f"{name_list([g for g, _ in offending])}"))
    raise DataError(problems)


def _complaint(task: Task[Any, Any], golds: Sequence[Any], predictions: Sequence[Any], mode: MetricMode) -> (
        str | None):
    try:
        task.evaluate(golds, predictions, mode)
    except DataError as error:
        return "; ".join(p.message for p in error.problems)
    except ValueError as error:
        return str(error)
    return None


def score_files(task: Task[Any, Any], gold_path: Path, predictions_path: Path, mode: str = "official",
                label_list_path: Path | None = None, gold_format: str | None = None) -> ScoreResult:
    """Read, align, validate and score one prediction file: the whole of `klue score`."""
    check_mode(mode)
    gold = read(task, gold_path, gold_format, purpose="score", option="--gold-format")
    result = score_predictions(task, gold.records, predictions_path, mode, label_list_path)
    return dataclasses.replace(result, gold_path=str(gold_path), warnings=tuple(gold.warnings) + result.warnings,
                               gold_format=gold.format)


def score_predictions(task: Task[Any, Any], golds: Sequence[Any], predictions_path: Path, mode: str = "official",
                      label_list_path: Path | None = None, with_statistics: bool = False) -> ScoreResult:
    """Score one prediction file against gold records already read (several files, one gold); with
    `with_statistics`, also the per-example statistics of the scores (from the same aligned predictions)."""
    metric_mode = check_mode(mode)
    require_labelled(golds, task.name)  # records read for prediction carry no gold to score against
    gold_guids = [task.guid(g) for g in golds]
    label_list = read_label_list(label_list_path, task.labels) if label_list_path is not None else None
    by_guid, kind, warnings = read_predictions(task, predictions_path, gold_guids, label_list)
    predictions = align(gold_guids, by_guid, str(predictions_path))
    with single_threaded_numerics():  # the same numbers for any thread count (klue.io.threads)
        report = evaluate(task, golds, predictions, metric_mode, str(predictions_path))
        statistics = None
        if with_statistics and task.statistics is not None:
            statistics = task.example_statistics(golds, predictions, metric_mode).only(report.scores)
    return ScoreResult(task.name, report, "", str(predictions_path), kind, tuple(warnings), statistics=statistics)


def _finite_or_none(value: float) -> float | None:
    # JSON has no NaN: an undefined score (e.g. Pearson r of a constant prediction) is written null.
    return value if math.isfinite(value) else None


def result_to_json(result: ScoreResult) -> dict[str, Any]:
    """One JSON object: task, mode, n_examples, each metric name at the top level, then breakdowns under
    their own names, the confusion matrix, the files and the number of warnings."""
    report = result.report
    out: dict[str, Any] = {"task": result.task, "mode": report.mode, "n_examples": report.n_examples}
    out.update({name: _finite_or_none(value) for name, value in report.scores.items()})
    for name, values in report.breakdown.items():
        out[name] = {k: _finite_or_none(v) for k, v in values.items()}
    if report.confusion is not None:
        out["confusion"] = {"labels": list(report.confusion.labels),
                            "counts": [list(row) for row in report.confusion.counts]}
    out["gold"] = result.gold_path
    out["gold_format"] = result.gold_format
    out["predictions"] = result.predictions_path
    out["prediction_format"] = result.prediction_format
    out["warnings"] = len(result.warnings)
    return out


@dataclass(frozen=True)
class RunRequest:
    """What a model family asks of its producer (klue.families -> klue.baselines, klue.training, klue.llm,
    klue.embed): one model spec on one task's protocol data with one seed, predictions and results into
    `out_dir`, judged in `metric_mode`. The producer answers with the judge's Results (`judge`)."""

    task: Task[Any, Any]
    model_spec: str  # as the user wrote it: "classic", a hub name or directory, "hf:...", "emb:..."
    protocol_data: ProtocolData[Any]  # the records the protocol gives: training, selection, evaluation
    seed: int
    out_dir: Path
    metric_mode: MetricMode = "official"

    def judge(self, data: ProtocolData[Any], producer: ProducerReport, *, write: bool = True) -> Results:
        """`judge` of this run's predictions against `data` (the protocol data, or the part evaluated)."""
        return judge(self.task, data, self.out_dir, self.metric_mode, producer, write=write)


@dataclass(frozen=True)
class ProducerReport:
    """What a producer says about its run; the judge adds the scores, the data and the provenance."""

    model: str
    model_family: str  # "classic", "encoder", "llm", "embedding"
    seed: int
    started: float  # time.perf_counter() when the run began (wall time runs to the end of judging)
    recipe: str | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    training: TrainingSummary | None = None
    learning_curve: list[CurvePoint] = field(default_factory=list)
    train_time_s: float = 0.0
    train_examples_per_s: float | None = None
    eval_examples_per_s: float | None = None
    partial: bool = False  # evaluated on part of the evaluation set only (--limit)
    llm: LlmSummary | None = None
    embedding: EmbeddingSummary | None = None


def provenance() -> dict[str, Any]:
    """The software fields of every results file."""
    return {"library_versions": library_versions(), "git_revision": git_revision(), "created_at": utc_now()}


def judge(task: Task[Any, Any], data: ProtocolData[Any], run_dir: Path, mode: MetricMode,
          producer: ProducerReport, *, write: bool = True) -> Results:
    """Score `run_dir/predictions.jsonl` against `data.eval` as `klue score` does, and assemble the run's
    Results (written to `run_dir/results.json` unless `write` is off: the non-main processes of a
    distributed run judge the same file without writing).

    The judge also keeps the per-example statistics of the scores (`run_dir/statistics.npz`): it is the
    one place that holds both gold and predictions, so `klue compare` and the report's intervals work from
    the run directory alone, without the gold data (a run scored before this has none and is named so)."""
    scored = score_predictions(task, data.eval, run_dir / PREDICTIONS_FILE, mode, with_statistics=True)
    report = scored.report
    results = Results(
        task=task.name, task_version=task.version, model=producer.model, model_family=producer.model_family,
        seed=producer.seed, protocol=data.protocol, protocol_official=data.official,
        protocol_description=data.description, metric_mode=mode, **metric_fields(report),
        metric_versions={name: task.metric_spec(name).version for name in report.scores},
        n_train=len(data.train), data_sources=list(data.sources), recipe=producer.recipe,
        hyperparameters=dict(producer.hyperparameters), training=producer.training,
        learning_curve=list(producer.learning_curve), train_time_s=producer.train_time_s,
        train_examples_per_s=producer.train_examples_per_s, eval_examples_per_s=producer.eval_examples_per_s,
        predictions_file=PREDICTIONS_FILE, partial=producer.partial, llm=producer.llm,
        embedding=producer.embedding, **provenance())
    if producer.llm is not None and producer.llm.not_applicable:  # a metric the mode cannot measure
        for name in producer.llm.not_applicable:
            results.scores.pop(name, None)
            results.metric_versions.pop(name, None)
    if scored.statistics is not None:
        results.statistics_file = STATISTICS_FILE
        if write:
            write_statistics(run_dir / STATISTICS_FILE, RunStatistics(
                task.name, task.version, mode, tuple(task.guid(g) for g in data.eval),
                Units.of([task.group_key(g) for g in data.eval]).index, scored.statistics.only(results.scores)))
    results.wall_time_s = time.perf_counter() - producer.started
    if write:
        write_data_warnings(run_dir, data.warnings)
        write_results(run_dir / RESULTS_FILE, results)
    return results


def write_data_warnings(run_dir: Path, warnings: Sequence[Problem]) -> None:
    """Every warning the readers gave on the run's data, one per line (`run_dir/data_warnings.txt`); none, no
    file (an older run's is removed, so the file always speaks of the data these results came from)."""
    path = run_dir / DATA_WARNINGS_FILE
    if not warnings:
        path.unlink(missing_ok=True)
        return
    write_text_atomic(path, "".join(f"{' '.join(str(w).split())}\n" for w in warnings))


def failure_results(task: str, task_version: str, model: str, model_family: str, seed: int, protocol: str,
                    mode: str, error: str, wall_time_s: float) -> Results:
    """A failed run's record: what is known of it, and its error (with the same provenance fields)."""
    return Results(task=task, task_version=task_version, model=model, model_family=model_family, seed=seed,
                   protocol=protocol, protocol_official=False, protocol_description="", metric_mode=mode,
                   status="failed", error=error, wall_time_s=wall_time_s, **provenance())
