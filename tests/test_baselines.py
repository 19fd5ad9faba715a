"""`klue.baselines.run`: declared baselines, outputs written atomically and scored by the judge, determinism."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import klue
from klue import registry
from klue.baselines import NoBaselineError, available_baselines, make_baseline, run
from klue.errors import DataError
from klue.scoring import RunRequest


def test_every_registered_task_has_a_baseline() -> None:
    tasks = registry.all_tasks()
    assert available_baselines(tasks) == sorted(t.name for t in tasks)
    for task in tasks:  # each declared reference resolves to a factory (no sklearn fit here)
        assert callable(make_baseline(task, 1).fit)


def test_a_task_without_a_baseline_is_a_clear_error() -> None:
    fake = dataclasses.replace(registry.get("ynat"), name="nonexistent", baseline=None)
    with pytest.raises(NoBaselineError, match="no CPU baseline"):
        make_baseline(fake, 1)


def test_run_writes_scored_predictions_and_results(protocol_slice, tmp_path: Path) -> None:
    data = protocol_slice("ynat", 300, 100)
    results = run(RunRequest(registry.get("ynat"), "classic", data, 3, tmp_path))
    lines = (tmp_path / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["guid"] for line in lines] == [r.guid for r in data.eval]
    written = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert written["scores"] == results.scores and written["protocol"] == "local:ynat-resplit"
    assert written["protocol_official"] is False and written["n_train"] == 300
    task = registry.get("ynat")
    assert written["metric_versions"] == {name: task.metric_spec(name).version for name in written["scores"]}
    assert not list(tmp_path.glob(".*.tmp"))  # nothing half-written left behind
    again = run(RunRequest(registry.get("ynat"), "classic", data, 3, tmp_path / "again"))
    assert again.scores == results.scores  # deterministic for a seed


def test_empty_sides_are_data_errors(protocol_slice, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no training records"):
        run(RunRequest(registry.get("ynat"), "classic", protocol_slice("ynat", 0, 10), 1, tmp_path))
    with pytest.raises(DataError, match="no evaluation records"):
        run(RunRequest(registry.get("ynat"), "classic", protocol_slice("ynat", 10, 0), 1, tmp_path))


# -- the same predictions for any thread count ------------------------------------------------------------

# Fits the NLI baseline through `klue.baselines.run` on synthetic pairs with a large vocabulary (the TF-IDF
# width makes BLAS split its sums across threads) and prints a digest of the fitted weights and predictions.
# The morphemes are the text's words (the baseline's `analyse` replaced): Kiwi analyses each text on one
# thread of its own (klue.text.kiwi), whatever BLAS has, and loading it and analysing the 1,000 made-up
# texts was 70% of each process's CPU (7-9 of 9-12 CPU-s); the fit, where the threads matter, is the real one.
_FIT_SCRIPT = """
import hashlib, random, sys
from pathlib import Path
import klue.baselines as baselines
import klue.tasks.nli.baseline as nli_baseline
from klue import registry
from klue.protocols import ProtocolData
from klue.scoring import RunRequest
from klue.tasks.nli.records import LABELS, NliRecord
from klue.text.features import Morpheme


def word_morphemes(text):
    found, start = [], 0
    for word in text.split(" "):
        form = word.rstrip(".")
        found.append(Morpheme(form, "NNG", start, len(form)))
        if form != word:
            found.append(Morpheme(".", "SF", start + len(form), 1))
        start += len(word) + 1
    return found


nli_baseline.analyse = lambda texts: [word_morphemes(t) for t in texts]

rng = random.Random(7)
syllables = [chr(0xAC00 + 28 * k) for k in range(0, 399, 7)]
words = sorted({rng.choice(syllables) + rng.choice(syllables) for _ in range(6000)})
records = [NliRecord(f"g{i}", "synthetic", " ".join(rng.choice(words) for _ in range(8)) + ".",
                     " ".join(rng.choice(words) for _ in range(4)) + ".", LABELS[rng.randrange(3)])
           for i in range(int(sys.argv[2]))]
made = []
real_make = baselines.make_baseline
baselines.make_baseline = lambda task, seed: made.append(real_make(task, seed)) or made[-1]
cut = len(records) * 4 // 5
out = Path(sys.argv[1])
baselines.run(RunRequest(registry.get("nli"), "classic", ProtocolData("files", False, "synthetic", records[:cut],
                                                                      records[cut:], None, ()), 42, out))
digest = hashlib.sha256(made[0]._model.coef_.tobytes())  # the fitted weights, bit for bit (test-only peek)
digest.update((out / "predictions.jsonl").read_bytes())
print(digest.hexdigest())
"""


def _fit_with_threads(threads: int, out: Path, n_records: int) -> str:
    env = os.environ | {name: str(threads) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                         "MKL_NUM_THREADS")}
    env["PYTHONPATH"] = str(Path(klue.__file__).parents[1])
    done = subprocess.run([sys.executable, "-c", _FIT_SCRIPT, str(out), str(n_records)], capture_output=True,
                          text=True, env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def _fit_here_on_one_thread(out: Path, n_records: int) -> str:
    """The same script in this process (its imports paid already), every BLAS and OpenMP pool at one thread
    whatever the baseline does: the reference. What the script replaces is put back afterwards."""
    import contextlib
    import importlib
    import io
    import runpy
    from unittest import mock

    from threadpoolctl import threadpool_limits

    import klue.tasks.nli.baseline as nli_baseline
    from klue import baselines
    from klue.io.threads import BASELINE_LIBRARIES

    for module in BASELINE_LIBRARIES:  # loaded first: threadpoolctl limits the pools loaded when it is asked
        importlib.import_module(module)
    script = out.parent / "fit_script.py"
    script.write_text(_FIT_SCRIPT, encoding="utf-8")
    printed = io.StringIO()
    with mock.patch.object(baselines, "make_baseline", baselines.make_baseline), \
            mock.patch.object(nli_baseline, "analyse", nli_baseline.analyse), \
            mock.patch.object(sys, "argv", [str(script), str(out), str(n_records)]), \
            threadpool_limits(limits=1), contextlib.redirect_stdout(printed):
        runpy.run_path(str(script), run_name="__main__")
    return printed.getvalue().strip()


@pytest.mark.slow
def test_one_and_two_blas_threads_fit_the_same_baseline(tmp_path: Path) -> None:
    # 500 pairs: without the pin (single_threaded_numerics made a no-op) one and two threads still give
    # different digests at 500, as at 1,500 (measured 2026-12-07, again with the words for morphemes). Two
    # threads in a process of its own (BLAS reads its thread count when it loads); one thread here.
    one = _fit_here_on_one_thread(tmp_path / "threads1", 500)
    two = _fit_with_threads(2, tmp_path / "threads2", 500)
    assert one == two  # weights and predictions bit for bit (different with 2 BLAS threads before the pin)


def test_baselines_fit_predict_and_are_scored_single_threaded(tmp_path: Path, monkeypatch) -> None:
    """Every task's baseline runs through `run`: whatever it computes, BLAS and OpenMP give it one thread,
    and so does the judge's scoring."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from klue import baselines, scoring
    from klue.protocols import ProtocolData
    from klue.tasks.nli.records import LABELS, NliPrediction, NliRecord

    seen: dict[str, set[int]] = {}

    def threads(stage: str) -> None:
        seen[stage] = {pool["num_threads"] for pool in threadpool_info()}

    class Recording:
        name = "recording"

        def __init__(self) -> None:
            self.hyperparameters: dict[str, object] = {}

        def fit(self, train: list[NliRecord], selection: object) -> None:
            threads("fit")

        def predict(self, records: list[NliRecord]) -> list[NliPrediction]:
            threads("predict")
            return [NliPrediction(r.guid, r.gold_label) for r in records]

    real_evaluate = scoring.evaluate

    def evaluate(*args: object, **kwargs: object) -> object:
        threads("score")
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(baselines, "make_baseline", lambda task, seed: Recording())
    monkeypatch.setattr(scoring, "evaluate", evaluate)
    records = [NliRecord(f"g{i}", "s", f"전제 {i}", f"가설 {i}", LABELS[i % 3]) for i in range(9)]
    data = ProtocolData("files", False, "synthetic", records[:6], records[6:], None, ())
    with threadpool_limits(limits=2):  # as on a machine with cores to spare
        assert {pool["num_threads"] for pool in threadpool_info()} == {2}
        results = baselines.run(RunRequest(registry.get("nli"), "classic", data, 1, tmp_path))
        assert {pool["num_threads"] for pool in threadpool_info()} == {2}  # given back afterwards
    assert results.scores["accuracy"] == 100.0
    assert seen == {"fit": {1}, "predict": {1}, "score": {1}}
