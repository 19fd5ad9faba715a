"""The leaderboard for other tools: Hugging Face model-card `model-index` blocks, JSON and CSV.

- `model-index`: one YAML block per measured model line (docs/results-schema.md): for each task it has a row for,
  the task (the hub's task type, from the task's `hub_task`), the dataset (`klue/klue`, the task's hub
  configuration as the `hf` protocol loads it, the split where the run evaluated on the whole dev set or
  the hub's validation split) and the official metrics (mean over seeds, 0-100), with the protocol, its
  official status, the seeds and the metric mode stated beside them. The published reference rows are
  not a user's model and are left out.
- `json`: every line of the leaderboard (measured and reference) with full-precision numbers: the KLUE or
  partial score and its interval, and per task its status, protocol, seeds, task score, every metric
  (mean, sample std, per-seed values, interval).
- `csv`: the same numbers in long form, one line per (model line, task, metric), for a spreadsheet or
  `pandas.pivot`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from klue import registry
from klue.errors import DataError
from klue.io import hf
from klue.metrics.resampling import Estimate
from klue.protocols import HF, hub_config
from klue.reporting.aggregate import Aggregate, Entry, Row, TaskInfo
from klue.reporting.intervals import Intervals
from klue.reporting.leaderboard import Leaderboard, metric_label

JSON_FORMAT_VERSION = 1  # bump when a key of `leaderboard_json` changes meaning or goes away
DIGITS = 2  # model-index values, as the leaderboard shows them (JSON and CSV keep full precision)
CSV_COLUMNS = ("rank", "model", "family", "metric_mode", "reference", "task", "status", "protocol", "official",
               "metric", "value", "std", "n_seeds", "low", "high")


# ------------------------------------------------------------------------------------ model-index


@dataclass(frozen=True)
class ModelCard:
    """The `model-index` of one leaderboard line: `metadata` is the model card's YAML front matter."""

    model: str
    metric_mode: str
    metadata: dict[str, Any]

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.metadata, sort_keys=False, allow_unicode=True, width=100)


def _eval_source_split(task_name: str, row: Row) -> tuple[str | None, str | None]:
    """(split, revision) of the hub copy that the row's evaluation set is: the `hf` protocol's validation
    split at its revision, or "validation" for the whole official dev file (the split the hub copy gives
    the dev set; its content is v1, the file's v1.1) when no other part of the run read that file (a run
    trained on part of dev was evaluated on the rest); (None, None) for anything else, and for a run that
    scored only part of its evaluation set."""
    if row.partial:
        return None, None
    sources = row.runs[0][1].data_sources
    evals = [s for s in sources if s.used_as.startswith("eval")]
    if row.protocol == HF:
        return hf.SPLIT_OF_ROLE["dev"], evals[0].git_blob if evals else None
    dev = registry.get(task_name).file("dev")
    if dev is None:
        return None, None
    evaluated_on_dev = any(s.git_blob == dev.git_blob for s in evals)
    dev_in_training = any(s.git_blob == dev.git_blob for s in sources if not s.used_as.startswith("eval"))
    return (hf.SPLIT_OF_ROLE["dev"], None) if evaluated_on_dev and not dev_in_training else (None, None)


def _protocol_words(row: Row) -> str:
    return f"{row.protocol} protocol" + ("" if row.protocol_official else ", not official")


def _result(info: TaskInfo, row: Row) -> dict[str, Any] | None:
    """One `model-index` result: a task on its dataset, the row's official metrics; None without any."""
    excluded = set(row.not_applicable_metrics)
    mode = "" if row.metric_mode == "official" else f", {row.metric_mode} metrics"
    metrics = []
    for name in info.metrics:
        stat = row.metric(name)
        if stat is None or name in excluded:
            continue
        what = f"mean of {stat.n} seeds" if stat.n > 1 else "one seed"
        metrics.append({"type": name, "value": round(stat.mean, DIGITS),
                        "name": f"{metric_label(name)} ({what}{mode})"})
    if not metrics:
        return None
    task = registry.get(info.name)
    split, revision = _eval_source_split(info.name, row)
    dataset: dict[str, Any] = {"type": hf.HF_DATASET, "name": f"KLUE {info.label} ({_protocol_words(row)})",
                               "config": hub_config(task)}
    if split is not None:
        dataset["split"] = split
    if revision is not None:
        dataset["revision"] = revision
    dataset["args"] = {"protocol": row.protocol, "official": row.protocol_official,
                       "protocol_description": row.protocol_description, "metric_mode": row.metric_mode,
                       "seeds": row.seeds}
    return {"task": {"type": task.hub_task, "name": info.title}, "dataset": dataset, "metrics": metrics}


def model_cards(agg: Aggregate) -> list[ModelCard]:
    """One `model-index` per measured leaderboard line with a scored task, in leaderboard order."""
    cards = []
    for entry in agg.entries:
        results = [r for task, info in agg.tasks.items() if task in entry.rows
                   if (r := _result(info, entry.rows[task])) is not None]
        if results:
            cards.append(ModelCard(entry.model, entry.metric_mode,
                                   {"model-index": [{"name": entry.model, "results": results}]}))
    return cards


def model_index_text(agg: Aggregate) -> str:
    """Every model's block as one YAML stream (documents split by `---`), each headed by a comment that says
    where to paste it; DataError when no line has a scored task."""
    cards = model_cards(agg)
    if not cards:
        raise DataError(f"no model under {agg.root} has a scored task: nothing to put in a model card", agg.root)
    blocks = []
    for card in cards:
        mode = "" if card.metric_mode == "official" else f", {card.metric_mode} metrics"
        name = " ".join(card.model.split())  # a comment is one line
        blocks.append(f"# {name}{mode}: paste into the model card's YAML front matter (README.md, between its "
                      f"--- lines)\n{card.to_yaml()}")
    return "---\n".join(blocks)


# ------------------------------------------------------------------------------------ JSON and CSV


def _number(value: float | None) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    return value if value is not None and math.isfinite(value) else None


def _interval(estimate: Estimate | None) -> list[float] | None:
    if estimate is None or _number(estimate.low) is None or _number(estimate.high) is None:
        return None
    return [estimate.low, estimate.high]


def _task_record(entry: Entry, info: TaskInfo, intervals: Intervals | None) -> dict[str, Any]:
    row = entry.rows.get(info.name)
    if row is None:
        if info.name in entry.not_applicable:
            return {"status": "not applicable", "reason": entry.not_applicable[info.name]}
        if info.name in entry.failed_tasks:
            return {"status": "failed", "error": entry.failed_tasks[info.name]}
        return {"status": "missing"}
    found = intervals.of(row) if intervals is not None else None
    score = entry.task_scores.get(info.name)
    metrics = {}
    for name in info.metrics:
        stat = row.metric(name)
        if stat is not None and name not in row.not_applicable_metrics:
            metrics[name] = {"mean": stat.mean, "std": stat.std, "values": list(stat.values),
                             "interval": _interval(found.estimates.get(name) if found is not None else None)}
    return {"status": "partial" if row.partial else "ok", "protocol": row.protocol,
            "protocol_official": row.protocol_official, "protocol_description": row.protocol_description,
            "seeds": row.seeds, "failed_seeds": [r.seed for _, r in row.failures],
            "score": score.mean if score is not None else None, "score_std": score.std if score is not None else None,
            "score_interval": _interval(found.task_estimate if found is not None else None),
            "metrics": metrics, "not_applicable_metrics": list(row.not_applicable_metrics)}


def _entry_record(rank: int | None, entry: Entry, tasks: list[TaskInfo], intervals: Intervals | None) -> dict[str, Any]:
    key = (entry.model, entry.metric_mode)
    estimate = intervals.klue_scores.get(key) if intervals is not None else None
    test = intervals.entry_tests.get(key) if intervals is not None else None
    return {"rank": rank, "model": entry.model, "family": entry.model_family, "metric_mode": entry.metric_mode,
            "reference": False, "official": entry.official, "klue_score": entry.klue_score,
            "partial_score": entry.partial_score if entry.klue_score is None else None,
            "score_interval": _interval(estimate), "n_scored": entry.n_scored, "n_tasks": entry.n_tasks,
            "versus_next": None if test is None else {"difference": test.difference, "low": test.low,
                                                      "high": test.high, "p_value": _number(test.p_value)},
            "tasks": {t.name: _task_record(entry, t, intervals) for t in tasks}}


def leaderboard_records(agg: Aggregate, board: Leaderboard) -> list[dict[str, Any]]:
    """Every line of the leaderboard as plain data: measured lines in rank order, then the references."""
    tasks = list(agg.tasks.values())
    records = []
    for i, entry in enumerate(agg.entries, start=1):
        records.append(_entry_record(i if entry.klue_score is not None else None, entry, tasks, board.intervals))
    for ref in agg.references:
        per_task: dict[str, Any] = {}
        for t in tasks:
            scores = ref.scores.get(t.name)
            per_task[t.name] = {"status": "missing"} if not scores else {
                "status": "ok", "protocol": "official", "protocol_official": True,
                "score": agg.reference_task_score(ref, t.name),
                "metrics": {m: {"mean": v, "std": None, "values": [v], "interval": None} for m, v in scores.items()}}
        records.append({"rank": None, "model": ref.model, "family": "reference", "metric_mode": "official",
                        "reference": True, "official": True, "klue_score": agg.reference_klue_score(ref),
                        "partial_score": None, "score_interval": None, "source": ref.source, "tasks": per_task})
    return records


def leaderboard_json(agg: Aggregate, board: Leaderboard) -> str:
    """The leaderboard as one JSON document (numbers 0-100 at full precision; null where there is none)."""
    document = {
        "format": "klue-leaderboard", "version": JSON_FORMAT_VERSION,
        "tasks": [{"name": t.name, "label": t.label, "title": t.title, "metrics": list(t.metrics),
                   "main_metrics": list(t.main_metrics)} for t in agg.tasks.values()],
        "resamples": board.intervals.n_resamples if board.intervals is not None else 0,
        "resampling_seed": board.intervals.seed if board.intervals is not None else None,
        "models": leaderboard_records(agg, board),
        "notes": board.notes,
    }
    return json.dumps(document, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def _csv_lines(record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The long-form lines of one leaderboard record: its KLUE (or partial) score, then per task the task
    score and each metric, or one line saying why the task has none."""
    head = {"rank": record["rank"], "model": record["model"], "family": record["family"],
            "metric_mode": record["metric_mode"], "reference": record["reference"]}
    total = record["klue_score"] if record["klue_score"] is not None else record["partial_score"]
    low, high = record["score_interval"] or (None, None)
    yield {**head, "task": "", "status": "ok" if total is not None else "missing", "protocol": "",
           "official": record["official"], "metric": "klue_score" if record["klue_score"] is not None
           else "partial_score", "value": total, "low": low, "high": high}
    for task, found in record["tasks"].items():
        where = {**head, "task": task, "status": found["status"], "protocol": found.get("protocol", ""),
                 "official": found.get("protocol_official", "")}
        if "metrics" not in found:
            yield where
            continue
        seeds = len(found.get("seeds", [])) or None
        low, high = found.get("score_interval") or (None, None)
        yield {**where, "metric": "task_score", "value": found["score"], "std": found.get("score_std"),
               "n_seeds": seeds, "low": low, "high": high}
        for name, stat in found["metrics"].items():
            low, high = stat["interval"] or (None, None)
            yield {**where, "metric": name, "value": stat["mean"], "std": stat["std"], "n_seeds": len(stat["values"]),
                   "low": low, "high": high}


def leaderboard_csv(agg: Aggregate, board: Leaderboard) -> str:
    """The leaderboard in long form (CSV_COLUMNS; empty where a value does not apply)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    for record in leaderboard_records(agg, board):
        for line in _csv_lines(record):
            writer.writerow({k: "" if v is None else v for k, v in line.items()})
    return out.getvalue()
