"""The Ray executor: the same cells and files as local processes, resume after the driver is killed, failures
and dead workers recorded per cell, and one sentence without Ray. One local Ray (2 CPUs) serves the module."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench_fakes import (
    FAIL_MARK,
    KILL_MARK,
    SLOW_MARK,
    calls,
    counting_cell,
    device_cell,
    killing_cell,
    slow_cell,
)

from klue.benchmark.cells import CellSpec
from klue.benchmark.ray_executor import RayExecutor, RayOptions, check_reachable, run_on_worker
from klue.benchmark.runner import BenchmarkPlan, run_benchmark
from klue.errors import DataError
from klue.results import read_results

HERE = Path(__file__).resolve().parent
KLUE = [sys.executable, "-c", "from klue.cli import main; main()"]
REAL_TASKS = ("ner", "dp")  # classic baselines that train in seconds on a small slice
# One seed in the suite, not the default 1 (so a seed left behind on one executor would show): a cell costs
# a few CPU s whatever the slice (4 local cells took 26 CPU s on 100 sentences, 23 on 40, when a NER cell
# still loaded Kiwi in its CRF child too), and the two cells still run side by side on the 2-CPU Ray.
# benchmarks/ner_crf_under_load.sh runs the test at its figure's size (seeds 1,2) through this variable;
# tests/tasks/test_tasks_baselines_structured.py keeps the deterministic test of issue 40's cause.
SEEDS = tuple(int(s) for s in os.environ.get("KLUE_RAY_TEST_SEEDS", "2").split(","))


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """One local Ray for the whole module (starting one costs seconds); its workers import bench_fakes. It
    declares one GPU, which Ray hands out by id (CUDA_VISIBLE_DEVICES) whether or not the machine has one."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'klue[ray]')")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
        ray.init(address="local", num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def fake_plan(out: Path, seeds: tuple[int, ...] = (1, 2)) -> BenchmarkPlan:
    return BenchmarkPlan(("nli", "sts"), ("fake",), seeds, out)


def scores(out: Path) -> dict[str, dict[str, float]]:
    return {str(p.parent.relative_to(out)): read_results(p).scores for p in sorted(out.rglob("results.json"))}


def small_klue_dir(klue_data_dir: Path, root: Path) -> Path:
    """The first sentences of the real NER and DP dev files, in the official layout: seconds per classic cell."""
    for task in REAL_TASKS:
        name = f"klue-{task}-v1.1"
        sentences = (klue_data_dir / name / f"{name}_dev.tsv").read_text(encoding="utf-8").split("\n\n")
        (root / name).mkdir(parents=True)
        (root / name / f"{name}_dev.tsv").write_text("\n\n".join(sentences[:100]) + "\n\n", encoding="utf-8")
    return root


@pytest.mark.longest(seconds=40)
@pytest.mark.realdata
@pytest.mark.slow
def test_ray_cells_leave_the_same_scores_and_predictions_as_local_processes(
        ray_address: str, klue_data_dir: Path, tmp_path: Path) -> None:
    data = small_klue_dir(klue_data_dir, tmp_path / "data")
    plans = {name: BenchmarkPlan(REAL_TASKS, ("classic",), SEEDS, tmp_path / name, protocol="local:dev-80-20",
                                 data_dir=str(data)) for name in ("local", "ray")}
    local = run_benchmark(plans["local"], jobs=1)  # one worker process: one cold start on this small machine
    on_ray = run_benchmark(plans["ray"], ray=RayOptions())  # two cells at a time on the module's 2-CPU Ray
    n_cells = len(REAL_TASKS) * len(SEEDS)
    assert not local.failed and not on_ray.failed and len(on_ray.outcomes) == n_cells
    assert scores(tmp_path / "ray") == scores(tmp_path / "local") and len(scores(tmp_path / "local")) == n_cells
    for cell in plans["local"].cells():
        twin = tmp_path / "ray" / cell.path.relative_to(tmp_path / "local")
        assert (twin / "predictions.jsonl").read_bytes() == (cell.path / "predictions.jsonl").read_bytes()
    invocation = json.loads((tmp_path / "ray" / "benchmark.json").read_text())["invocations"][-1]
    assert invocation["executor"]["name"] == "ray" and invocation["executor"]["address"] == ray_address
    assert invocation["executor"]["cluster_resources"]["CPU"] == 2
    assert invocation["executor"]["gpus_per_cell"] == {"classic": 0}
    assert json.loads((tmp_path / "local" / "benchmark.json").read_text())["invocations"][-1]["executor"] == {
        "name": "local", "workers": 1, "gpus": []}


DRIVER = """
import sys
from pathlib import Path
from bench_fakes import slow_cell
from klue.benchmark.ray_executor import RayOptions
from klue.benchmark.runner import BenchmarkPlan, run_benchmark
run_benchmark(BenchmarkPlan(("nli", "sts"), ("fake",), (1, 2), Path(sys.argv[1])), slow_cell, jobs=1,
              ray=RayOptions(address=sys.argv[2]))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_a_driver_killed_mid_run_stops_its_cells_and_the_rerun_resumes(ray_address: str, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    out.mkdir()
    (out / SLOW_MARK).write_text("nli/seed2")  # the second cell hangs until its driver is killed
    env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(out), ray_address], env=env,
                              stdout=subprocess.DEVNULL, stderr=(tmp_path / "driver.err").open("w"))
    try:
        first_done = wait_for(lambda: (out / "nli/fake/seed1/results.json").is_file()
                              and (out / "slow-pid").is_file(), 90)
        assert first_done, (tmp_path / "driver.err").read_text()
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    finally:
        if driver.poll() is None:
            driver.kill()
    worker = int((out / "slow-pid").read_text())
    assert wait_for(lambda: not _alive(worker), 30), "the killed driver's cell kept running on its Ray worker"
    assert not (out / "nli/fake/seed2/results.json").exists()

    (out / SLOW_MARK).unlink()
    summary = run_benchmark(fake_plan(out), slow_cell, ray=RayOptions())
    assert [c.label for c in summary.skipped] == ["nli · fake · seed 1"]
    assert len(summary.outcomes) == 3 and not summary.failed
    assert calls(out).count("nli/fake/seed1") == 1  # the finished cell was not run again
    manifest = json.loads((out / "benchmark.json").read_text())
    assert [i["status"] for i in manifest["invocations"]] == ["running", "finished"]  # kill -9 says nothing
    run_benchmark(fake_plan(tmp_path / "whole"), slow_cell, ray=RayOptions())
    assert scores(out) == scores(tmp_path / "whole") and len(scores(out)) == 4


@pytest.mark.slow
def test_a_failing_cell_and_a_dead_ray_worker_fail_their_cells_only(ray_address: str, tmp_path: Path) -> None:
    (tmp_path / FAIL_MARK).write_text("sts")
    (tmp_path / KILL_MARK).write_text("nli/seed1")  # this cell's worker kills itself, as the OOM killer would
    summary = run_benchmark(fake_plan(tmp_path), killing_cell, ray=RayOptions())
    status = {o.spec.label: o.status for o in summary.outcomes}
    assert status == {"nli · fake · seed 1": "failed", "nli · fake · seed 2": "ok",
                      "sts · fake · seed 1": "failed", "sts · fake · seed 2": "failed"}
    failed = read_results(tmp_path / "sts/fake/seed1/results.json")
    assert failed.status == "failed" and "dev file is not in" in failed.error
    assert "Traceback" in (tmp_path / "sts/fake/seed1/error.txt").read_text()
    died = read_results(tmp_path / "nli/fake/seed1/results.json")
    assert died.status == "failed" and "Ray task running this cell failed" in died.error
    # the next run retries the failed cells only, and they succeed
    (tmp_path / FAIL_MARK).unlink()
    (tmp_path / KILL_MARK).unlink()
    rerun = run_benchmark(fake_plan(tmp_path), killing_cell, ray=RayOptions(), jobs=1)
    assert sorted(o.spec.label for o in rerun.outcomes if o.status == "ok") == [
        "nli · fake · seed 1", "sts · fake · seed 1", "sts · fake · seed 2"]


@pytest.mark.slow
def test_encoder_cells_get_a_gpu_from_ray_and_classic_cells_none(ray_address: str, tmp_path: Path) -> None:
    plan = BenchmarkPlan(("nli", "sts"), ("some/encoder", "classic"), (1,), tmp_path)
    summary = run_benchmark(plan, device_cell, ray=RayOptions())
    assert not summary.failed
    gpus = [line.split(" ", 1)[1] for line in calls(tmp_path)]
    assert sorted(gpus) == ["0", "0", "None", "None"]  # each encoder cell got the GPU; Ray gave classic cells none
    executor = json.loads((tmp_path / "benchmark.json").read_text())["invocations"][-1]["executor"]
    assert executor["gpus_per_cell"] == {"some/encoder": 1.0, "classic": 0.0}


@pytest.mark.slow
def test_a_worker_that_cannot_see_the_benchmark_directory_says_so(ray_address: str, tmp_path: Path) -> None:
    import ray

    spec = CellSpec("nli", "fake", 1, "auto", "official", str(tmp_path / "elsewhere" / "nli" / "fake" / "seed1"))
    outcome = ray.get(ray.remote(run_on_worker).remote(counting_cell, spec, str(tmp_path / "elsewhere")))
    assert outcome.status == "failed" and outcome.cannot_write  # the runner stops: every cell would fail so
    assert "cannot see the benchmark directory" in outcome.error and "shared file system" in outcome.error
    assert not (tmp_path / "elsewhere").exists()  # nothing written where no one would look


@pytest.mark.slow  # every test that asks for `ray_address` is: starting the cluster takes 5-10 s
def test_ray_settings_are_checked(ray_address: str, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="--jobs 0 runs cells in this process"):
        RayExecutor(RayOptions(), 0, ["classic"], tmp_path)
    with pytest.raises(DataError, match="--cpus-per-cell must be more than 0"):
        RayOptions(cpus_per_cell=0)
    with pytest.raises(DataError, match="takes auto, HOST:PORT or ray://HOST:PORT, not 'headnode'"):
        RayOptions(address="headnode")
    with pytest.raises(DataError, match="nothing answers there"):  # at once, where Ray would wait for minutes
        check_reachable("127.0.0.1:1")
    executor = RayExecutor(RayOptions(gpus_per_cell=0.5), None, ["classic", "some/encoder"], tmp_path)
    try:  # a session opened before is used as it is, and left open by close()
        assert executor.gpus == {"classic": 0.0, "some/encoder": 0.5} and executor.workers == 2  # by CPUs
    finally:
        executor.close()
    only_gpu_cells = RayExecutor(RayOptions(), None, ["some/encoder"], tmp_path)
    assert only_gpu_cells.gpus == {"some/encoder": 1.0} and only_gpu_cells.workers == 1  # by the one GPU
    only_gpu_cells.close()
    import ray

    assert ray.is_initialized()


def test_without_ray_the_executor_is_one_sentence(tmp_path: Path) -> None:
    hide_ray = "import sys; sys.modules['ray'] = None; from klue.cli import main; main()"
    result = subprocess.run([sys.executable, "-c", hide_ray, "benchmark", "--model", "classic", "--tasks", "nli",
                             "--executor", "ray", "--out", str(tmp_path / "b")],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "klue: error: --executor ray needs Ray, which is not installed: pip install 'klue[ray]'"]
    assert not (tmp_path / "b").exists()  # refused before anything was written


@pytest.mark.slow
def test_ray_options_go_with_the_ray_executor_and_help_explains_them(tmp_path: Path) -> None:
    clean = os.environ | {"COLUMNS": "200"}
    result = subprocess.run([*KLUE, "benchmark", "--model", "classic", "--out", str(tmp_path), "--ray-address",
                             "auto"], capture_output=True, text=True, timeout=120, env=clean, check=False)
    assert result.returncode == 2 and "--ray-address go with --executor ray" in result.stderr
    shown = subprocess.run([*KLUE, "benchmark", "--help"], capture_output=True, text=True, timeout=120, env=clean,
                           check=False).stdout
    shown = " ".join(shown.replace("│", " ").split())  # the words of the help, however rich wrapped them
    for option in ("--executor", "--ray-address", "--cpus-per-cell", "--gpus-per-cell", "shared file system",
                   "klue[ray]"):
        assert option in shown, option
