"""The runner: cells, resume after an interruption, failures recorded, worker processes."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from bench_fakes import (
    FAIL_MARK,
    INTERRUPT_MARK,
    KILL_MARK,
    calls,
    counting_cell,
    device_cell,
    killing_cell,
    oracle_family,
)

from klue import registry
from klue.benchmark.cells import CellSpec, choose_protocol, model_slug, run_cell
from klue.benchmark.executors import worker_count
from klue.benchmark.runner import BenchmarkPlan, cell_done, run_benchmark
from klue.errors import DataError
from klue.io.locate import DataRoot
from klue.results import read_results, write_results


def two_tasks() -> tuple[str, str]:
    names = [t.name for t in registry.all_tasks()]
    assert len(names) >= 2, "the registry holds fewer than 2 tasks"
    return names[0], names[1]


def plan_for(out: Path, **changes: object) -> BenchmarkPlan:
    return BenchmarkPlan(**{"tasks": two_tasks(), "models": ("fake",), "seeds": (1, 2), "out": out} | changes)


def results_files(out: Path) -> dict[str, Path]:
    return {str(p.relative_to(out).parent): p for p in out.rglob("results.json")}


@pytest.mark.parametrize("jobs", [0, 1])
def test_interrupted_benchmark_resumes_without_redoing_finished_cells(tmp_path: Path, jobs: int) -> None:
    first, second = two_tasks()
    plan = plan_for(tmp_path)
    (tmp_path / INTERRUPT_MARK).write_text(f"{first}/seed2")  # the second cell is interrupted
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(plan, counting_cell, jobs=jobs)
    assert list(results_files(tmp_path)) == [f"{first}/fake/seed1"]
    assert json.loads((tmp_path / "benchmark.json").read_text())["status"] == "interrupted"
    done = tmp_path / first / "fake" / "seed1" / "results.json"
    mtime = done.stat().st_mtime_ns

    (tmp_path / INTERRUPT_MARK).unlink()
    summary = run_benchmark(plan, counting_cell, jobs=jobs)
    assert [c.label for c in summary.skipped] == [f"{first} · fake · seed 1"]
    assert len(summary.outcomes) == 3 and not summary.failed
    assert done.stat().st_mtime_ns == mtime
    assert calls(tmp_path).count(f"{first}/fake/seed1") == 1
    assert sorted(results_files(tmp_path)) == sorted(f"{t}/fake/seed{s}" for t in (first, second) for s in (1, 2))
    manifest = json.loads((tmp_path / "benchmark.json").read_text())
    assert manifest["status"] == "finished" and manifest["finished_at"]
    assert [i["status"] for i in manifest["invocations"]] == ["interrupted", "finished"]
    assert manifest["invocations"][-1]["cells_skipped"] == 1

    again = run_benchmark(plan, counting_cell, jobs=jobs)  # nothing left to do
    assert not again.outcomes and len(calls(tmp_path)) == 4


def test_a_failing_cell_is_recorded_and_the_others_complete(tmp_path: Path) -> None:
    first, second = two_tasks()
    (tmp_path / FAIL_MARK).write_text(second)
    summary = run_benchmark(plan_for(tmp_path), counting_cell, jobs=2)
    assert sorted((o.spec.task, o.status) for o in summary.outcomes) == sorted(
        [(first, "ok"), (first, "ok"), (second, "failed"), (second, "failed")])
    failed = read_results(tmp_path / second / "fake" / "seed1" / "results.json")
    assert failed.status == "failed" and "dev file is not in" in failed.error
    assert "Traceback" in (tmp_path / second / "fake" / "seed1" / "error.txt").read_text()
    # the next run retries the failed cells only
    (tmp_path / FAIL_MARK).unlink()
    rerun = run_benchmark(plan_for(tmp_path), counting_cell, jobs=1)
    assert sorted(o.spec.label for o in rerun.outcomes) == [f"{second} · fake · seed 1", f"{second} · fake · seed 2"]
    assert all(o.status == "ok" for o in rerun.outcomes)
    assert not (tmp_path / second / "fake" / "seed1" / "error.txt").exists()


def test_a_killed_worker_fails_its_cell_and_the_benchmark_goes_on(tmp_path: Path) -> None:
    first = two_tasks()[0]
    (tmp_path / KILL_MARK).write_text(f"{first}/seed1")
    summary = run_benchmark(plan_for(tmp_path), killing_cell, jobs=1)
    status = {o.spec.label: o.status for o in summary.outcomes}
    assert status.pop(f"{first} · fake · seed 1") == "failed"
    assert set(status.values()) == {"ok"} and len(status) == 3  # a fresh worker ran the rest
    died = read_results(tmp_path / first / "fake" / "seed1" / "results.json")
    assert died.status == "failed" and "died" in died.error
    (tmp_path / KILL_MARK).unlink()
    assert [o.spec.label for o in run_benchmark(plan_for(tmp_path), killing_cell, jobs=1).outcomes] == [
        f"{first} · fake · seed 1"]


def test_worker_output_goes_to_the_cell_log(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, seeds=(1,))
    run_benchmark(plan, counting_cell, jobs=1)
    assert all((c.path / "log.txt").is_file() for c in plan.cells())


def test_results_of_another_cell_or_mode_are_a_conflict(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, seeds=(1,))
    run_benchmark(plan, counting_cell, jobs=0)
    cell = plan.cells()[0]
    assert cell_done(cell)
    with pytest.raises(DataError, match="metric mode"):
        run_benchmark(plan_for(tmp_path, seeds=(1,), mode="corrected"), counting_cell, jobs=0)
    path = cell.path / "results.json"
    other = read_results(path)
    other.seed = 9
    write_results(path, other)
    with pytest.raises(DataError, match="use another --out"):
        cell_done(cell)
    path.write_text("{half a fi")  # not a valid results file: the cell is simply not done
    assert not cell_done(cell)


def test_plan_cells_and_slugs(tmp_path: Path) -> None:
    plan = BenchmarkPlan(two_tasks(), ("classic", "klue/roberta-base"), (1, 2, 3), tmp_path)
    cells = plan.cells()
    assert len(cells) == 12
    assert cells[0].path == tmp_path / two_tasks()[0] / "classic" / "seed1"
    assert model_slug("klue/roberta-base") == "klue--roberta-base"
    assert model_slug("/models/my model/") == "models--my-model"
    with pytest.raises(DataError, match="repeat"):
        BenchmarkPlan(two_tasks(), ("classic",), (1, 1), tmp_path)


def test_worker_count() -> None:
    assert worker_count(None, ["classic"], ["0", "1"]) == 1
    assert worker_count(None, ["klue/roberta-base"], ["0", "1"]) == 2  # one cell per GPU
    assert worker_count(4, ["klue/roberta-base"], ["0", "1"]) == 2
    assert worker_count(3, ["classic"], []) == 3
    assert worker_count(0, ["klue/roberta-base"], ["0"]) == 0
    with pytest.raises(DataError):
        worker_count(-1, ["classic"], [])


def test_each_worker_owns_one_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    plan = plan_for(tmp_path, models=("some/encoder",))
    run_benchmark(plan, device_cell, jobs=None)  # default: one worker per GPU
    seen = [line.split() for line in calls(tmp_path)]
    gpu_of = {pid: gpu for pid, gpu in seen}
    assert len(seen) == 4 and set(gpu_of.values()) == {"3", "5"}
    assert all(gpu_of[pid] == gpu for pid, gpu in seen)  # a worker keeps its GPU
    assert len(gpu_of) == 2


def test_auto_protocol_is_official_only_with_the_train_file(tmp_path: Path) -> None:
    from klue.io.locate import DataRoots

    task = registry.all_tasks()[0]
    roots = DataRoots(tmp_path)
    assert choose_protocol(task, "auto", roots) == task.default_local_protocol
    train = task.file("train")
    assert train is not None
    (tmp_path / train.path).parent.mkdir(parents=True)
    (tmp_path / train.path).write_text("")
    assert choose_protocol(task, "auto", roots) == "official"
    assert choose_protocol(task, "heldout", roots) == "heldout"


@pytest.mark.realdata
def test_real_cells_with_a_fake_family_and_a_task_without_data(tmp_path: Path, klue_data_dir: Path) -> None:
    """The default cell (registry task, real protocol data, official metrics) with the oracle family;
    a task whose dev file is absent fails with the protocol's DataError and the other completes."""
    root = DataRoot(klue_data_dir, "test")
    dev_path = {t.name: t.file("dev") for t in registry.all_tasks()}
    present = [t for t in registry.all_tasks() if dev_path[t.name] and (root.path / dev_path[t.name].path).is_file()]
    absent = [t for t in registry.all_tasks() if dev_path[t.name] and not (root.path / dev_path[t.name].path).is_file()]
    if not present or not absent:
        pytest.skip("needs one registered task with its dev file here and one without")
    task = min(present, key=lambda t: (dev_path[t.name].size or 0))
    plan = BenchmarkPlan((task.name, absent[0].name), ("oracle",), (1,), tmp_path, protocol="local:dev-80-20",
                         data_dir=str(klue_data_dir))
    summary = run_benchmark(plan, functools.partial(run_cell, family=oracle_family), jobs=1)
    by_task = {o.spec.task: o for o in summary.outcomes}
    assert by_task[task.name].status == "ok"
    assert by_task[absent[0].name].status == "failed"
    assert absent[0].name in by_task[absent[0].name].error
    ok = read_results(tmp_path / task.name / "oracle" / "seed1" / "results.json")
    assert ok.protocol == "local:dev-80-20" and not ok.protocol_official and ok.data_sources
    assert ok.scores[task.key_metric] == pytest.approx(100.0)
    assert ok.library_versions and ok.created_at
    n_predictions = len((tmp_path / task.name / "oracle" / "seed1" / "predictions.jsonl").read_text().splitlines())
    assert n_predictions == ok.n_eval > 0


def test_cell_spec_label() -> None:
    spec = CellSpec("nli", "classic", 3, "auto", "official", "/tmp/x")
    assert spec.label == "nli · classic · seed 3"


def test_training_overrides_reach_encoder_cells_only(tmp_path: Path) -> None:
    plan = BenchmarkPlan(two_tasks(), ("classic", "some/encoder"), (1,), tmp_path, overrides=(("epochs", 1),))
    by_model = {cell.model: cell.overrides for cell in plan.cells()}
    assert by_model == {"classic": (), "some/encoder": (("epochs", 1),)}
