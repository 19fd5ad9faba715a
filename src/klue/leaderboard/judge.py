"""The scoring subprocess: one prediction file, parsed and scored by klue's one judge on the public and
the private part of a site's gold, under the limits the parent set (CPU time, memory, file size).

A submission is a prediction file only, never code: this process reads it with the task's prediction
reader (`klue.predictions`) and scores it with `klue.scoring.evaluate`, the function `klue score` ends in,
and the per-example statistics of the task (`klue.metrics.resampling` for the intervals).
`klue.leaderboard.scorer` runs `judge(request)` in a forked child under limits (`python -m
klue.leaderboard.judge` does the same from stdin to stdout, for a look by hand). No Django here, and nothing read from the site's database.

The answer holds the public part's scores, per-type breakdowns, 95% intervals and the task score's
bootstrap resamples (the same seed for every submission, so two submissions' resamples are paired), and the
private part's scores and resamples; the parent stores the private ones apart and shows them only after
`reveal`. A rejected file gives the judge's messages, each naming the upload (not a server path) and a guid.
"""

from __future__ import annotations

import base64
import errno
import gzip
import json
import math
import os
import sys
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from klue.errors import DataError, Problem
from klue.io.hashing import sha256_file
from klue.io.threads import single_threaded_numerics
from klue.leaderboard.gold import load
from klue.metrics.report import MetricReport
from klue.metrics.resampling import DEFAULT_RESAMPLES, Side, Units, bootstrap, interval
from klue.predictions import align, read_predictions
from klue.scoring import evaluate
from klue.tasks.base import Task

GZIP_MAGIC = b"\x1f\x8b"
SEED = 0  # one bootstrap seed for every submission of a site: resamples of two submissions are paired
CHUNK = 1 << 20


def decompressed(source: Path, target: Path, limit: int) -> None:
    """`source` (gzip or plain) written to `target` as plain bytes; DataError past `limit` bytes (a gzip
    bomb stops at the cap, never expanded whole)."""
    with source.open("rb") as raw:
        gzipped = raw.read(2) == GZIP_MAGIC
    opener = gzip.open if gzipped else open
    written = 0
    try:
        with opener(source, "rb") as inp, target.open("wb") as out:
            while chunk := inp.read(CHUNK):
                written += len(chunk)
                if written > limit:
                    raise DataError(f"the file is larger than {limit // (1 << 20)} MiB "
                                    f"{'decompressed' if gzipped else ''}".rstrip())
                out.write(chunk)
    except OSError as error:
        if error.errno == errno.EFBIG:  # the kernel's file-size limit (klue.leaderboard.scorer), under the cap
            raise DataError("the file is larger than the server's limit on a decompressed file") from error
        raise DataError(f"not a readable gzip file: {error}") from error
    except (EOFError, zlib.error) as error:
        raise DataError(f"not a readable gzip file: {error}") from error


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _encode(values: np.ndarray) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")


def decode_resamples(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f8")


def part_result(task: Task[Any, Any], golds: Sequence[Any], predictions: Sequence[Any], shown: str,
                n_resamples: int) -> dict[str, Any]:
    """Scores, breakdowns, intervals and the task score's resamples of one part."""
    report: MetricReport = evaluate(task, golds, predictions, "official", shown)
    main = [m for m in task.main_metrics if m in report.scores]
    out: dict[str, Any] = {
        "n_examples": report.n_examples,
        "scores": {k: _finite(v) for k, v in report.scores.items()},
        "breakdown": {name: {k: _finite(v) for k, v in values.items()} for name, values in report.breakdown.items()},
        "task_score": _finite(float(np.mean([report.scores[m] for m in main]))) if main else None,
        "intervals": {}, "task_interval": None, "resamples": None,
    }
    if task.statistics is None or n_resamples < 1:
        return out
    statistics = task.example_statistics(golds, predictions, "official").only(report.scores)
    side = Side([statistics], Units.of([task.group_key(g) for g in golds]))
    values = bootstrap([side], n_resamples, SEED)[0]
    out["intervals"] = {m: [_finite(x) for x in interval(v)] for m, v in values.items()}
    if main and all(m in values for m in main):
        task_values = np.mean([values[m] for m in main], axis=0)
        out["task_interval"] = [_finite(x) for x in interval(task_values)]
        out["resamples"] = _encode(task_values)
    return out


def judge(request: dict[str, Any]) -> dict[str, Any]:
    """One request (see the module's docstring) -> the answer; a rejected file answers its problems."""
    shown = str(request["shown"])
    gold_path = Path(request["gold"])
    if sha256_file(gold_path) != request["gold_sha256"]:
        raise RuntimeError(f"the gold file of {request['task']} changed since `init` (sha256 differs)")
    gold = load(request["task"], gold_path, request.get("gold_format"), int(request["seed"]),
                float(request["private_fraction"]))
    task = gold.task
    with tempfile.TemporaryDirectory(prefix="klue-judge-") as scratch:
        plain = Path(scratch) / "predictions"
        try:
            decompressed(Path(request["predictions"]), plain, int(request["max_bytes"]))
            every = gold.records  # file order: which guids a message names says nothing about the split
            guids = [task.guid(g) for g in every]
            by_guid, _, warnings = read_predictions(task, plain, guids, None)
            aligned = dict(zip(guids, align(guids, by_guid, shown)))
            public_predictions = [aligned[task.guid(g)] for g in gold.public]
            private_predictions = [aligned[task.guid(g)] for g in gold.private]
            with single_threaded_numerics():
                # The whole file is checked before any score: a problem on a private example is named by
                # its guid like any other, and no score of either part is computed for a rejected file.
                evaluate(task, every, [aligned[g] for g in guids], "official", shown)
                if request.get("check_only"):
                    return {"ok": True, "warnings": _messages(warnings, plain, shown)}
                n = int(request.get("resamples", DEFAULT_RESAMPLES))
                public = part_result(task, gold.public, public_predictions, shown, n)
                private = part_result(task, gold.private, private_predictions, shown, n)
        except DataError as error:
            return {"ok": False, "problems": _messages(error.problems, plain, shown)}
    versions = {name: task.metric_spec(name).version for name in public["scores"]}
    return {"ok": True, "warnings": _messages(warnings, plain, shown), "public": public, "private": private,
            "metric_versions": versions, "task_version": task.version}


def _messages(problems: Sequence[Problem], plain: Path, shown: str) -> list[str]:
    """Problems as lines naming the upload, never the scratch file."""
    out = []
    for problem in problems:
        path = shown if problem.path in (str(plain), "") else problem.path
        out.append(Problem(path, problem.location, problem.message, problem.severity).text().replace(
            str(plain), shown))
    return out


def main() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    request = json.loads(sys.stdin.read())
    answer = judge(request)
    sys.stdout.write(json.dumps(answer, allow_nan=False))


if __name__ == "__main__":
    main()
