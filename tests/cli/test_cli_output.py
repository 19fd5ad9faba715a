"""The output side: a read-only directory, a full disk or a directory where a file is meant is one clear
error (exit 2) before the work starts where it can be known, and nothing is left half-written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cli_in_process import Done, klue_in_process
from klue import registry


def klue(*args: str) -> Done:
    """In this process (tests/cli_in_process.py): the subject is each command's errors and files."""
    return klue_in_process(*args)


def assert_one_clear_error(run: Done, *phrases: str) -> None:
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    last = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
    assert run.stderr.startswith("klue: error: ") or last.startswith("klue: error: "), run.stderr[-2000:]
    assert run.stderr.count("klue: error:") == 1, run.stderr[-2000:]
    for phrase in phrases:
        assert phrase in run.stderr, run.stderr


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*")) if directory.exists() else []


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A benchmark directory of hand-made results: one task, one model (the report needs no training)."""
    import random

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reporting"))
    from report_fixtures import fixture_results

    from klue.results import write_results

    root = tmp_path_factory.mktemp("bench")
    task = registry.all_tasks()[0]
    write_results(root / task.name / "m" / "seed1" / "results.json",
                  fixture_results(task, "m", 1, True, random.Random(3)))
    return root


def test_report_to_a_full_disk(bench: Path, full_disk: Path) -> None:
    run = klue("report", str(bench), "-o", str(full_disk / "report.html"))
    assert_one_clear_error(run, "report.html", "the disk is full")
    assert leftovers(full_disk) == []  # no report, no temporary file


@pytest.mark.slow
def test_report_to_a_read_only_directory_and_to_a_directory(bench: Path, read_only_dir: Path,
                                                           tmp_path: Path) -> None:
    assert_one_clear_error(klue("report", str(bench), "-o", str(read_only_dir / "r.html")), "cannot write")
    assert_one_clear_error(klue("report", str(bench), "-o", str(tmp_path)), "is a directory")
    assert_one_clear_error(klue("report", str(bench), "--format", "md", "-o", str(tmp_path)), "is a directory")


@pytest.mark.slow
def test_predict_checks_its_output_before_inference(tmp_path: Path, read_only_dir: Path) -> None:
    # The model does not exist: an output problem must be found first, before any model is loaded.
    examples = tmp_path / "in.json"
    examples.write_text("[]", encoding="utf-8")
    for output, phrase in ((tmp_path, "is a directory"), (read_only_dir / "p.jsonl", "cannot write")):
        run = klue("predict", "--task", "nli", "--model", str(tmp_path / "no-model"), "--input", str(examples),
                   "--output", str(output))
        assert_one_clear_error(run, phrase)


def test_train_checks_its_output_before_reading_data(tmp_path: Path, read_only_dir: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    for output, phrase in ((read_only_dir / "run", "cannot write"), (blocker, "is a file")):
        run = klue("train", "--task", "nli", "--model", str(tmp_path / "no-model"), "--data-dir",
                   str(tmp_path / "no-data"), "--output", str(output))
        assert_one_clear_error(run, phrase)


def test_benchmark_into_a_read_only_directory(read_only_dir: Path) -> None:
    run = klue("benchmark", "--tasks", registry.all_tasks()[0].name, "--model", "classic", "--out",
               str(read_only_dir / "bench"))
    assert_one_clear_error(run, "cannot write")


@pytest.mark.realdata
@pytest.mark.slow
def test_benchmark_on_a_disk_that_fills_up_stops_with_one_error(klue_data_dir: Path, shared_data_dir: Path,
                                                                tmp_path: Path) -> None:
    """The first 1,000 NLI dev pairs (whole premises): the cell's predictions (about 12 KB) fill the 12 KiB disk
    in its worker process, as the whole file's did a 48 KiB one, at a third of the training."""
    from filesystems import full_disk

    folder = "klue-nli-v1.1"
    rows = json.loads((klue_data_dir / folder / f"{folder}_dev.json").read_text(encoding="utf-8"))
    assert rows[999]["premise"] != rows[1000]["premise"]
    data = tmp_path / "data"
    (data / folder).mkdir(parents=True)
    (data / folder / f"{folder}_dev.json").write_text(json.dumps(rows[:1000], ensure_ascii=False), encoding="utf-8")
    with full_disk(tmp_path / "disk", kib=12) as disk:
        run = klue("benchmark", "--tasks", "nli", "--model", "classic", "--protocol", "local:dev-80-20",
                   "--seeds", "1,2", "--jobs", "1", "--out", str(disk / "bench"), "--data-dir", str(data),
                   "--extra-data-dir", str(shared_data_dir))
        assert_one_clear_error(run, "the disk is full")
        assert not [name for name in leftovers(disk) if name.endswith(".tmp")]
        manifest = disk / "bench" / "benchmark.json"
        if manifest.is_file():  # when it could still be written, it says the run did not finish
            assert json.loads(manifest.read_text(encoding="utf-8"))["status"] != "finished"
