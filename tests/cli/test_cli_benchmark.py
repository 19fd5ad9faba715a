"""`klue benchmark`, `klue report` and `klue quickstart` from the command line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_in_process import Done, klue_in_process
from klue import registry


def klue(*args: str, env: dict[str, str] | None = None) -> Done:
    """Run `klue` in this process (tests/cli_in_process.py), without the caller's KLUE_* settings (plus `env`)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KLUE_")}
    clean |= {"COLUMNS": "200", "OMP_NUM_THREADS": "1"} | (env or {})
    return klue_in_process(*args, environ=clean)


@pytest.mark.slow
def test_help_explains_each_command() -> None:
    for command in ("benchmark", "report", "quickstart"):
        result = klue(command, "--help")
        assert result.returncode == 0, result.stderr
        assert "--out" in result.stdout or "DIRECTORY" in result.stdout


@pytest.mark.slow
def test_benchmark_records_a_task_without_data_then_reports_it(tmp_path: Path) -> None:
    task = registry.all_tasks()[0].name
    out = tmp_path / "bench"
    empty = tmp_path / "no-data"
    empty.mkdir()
    result = klue("benchmark", "--model", "classic", "--tasks", task, "--out", str(out), "--data-dir", str(empty))
    assert result.returncode == 1, result.stderr  # a failed cell: the run completes, the exit code says so
    record = json.loads((out / task / "classic" / "seed1" / "results.json").read_text())
    assert record["status"] == "failed" and "missing" in record["error"]
    assert json.loads((out / "benchmark.json").read_text())["status"] == "finished"
    assert "failed" in result.stdout  # the leaderboard printed after the run

    md = klue("report", str(out), "--format", "md")
    assert md.returncode == 0, md.stderr
    assert md.stdout.startswith("| # | Model |") and "failed" in md.stdout
    html = klue("report", str(out), "-o", str(tmp_path / "r.html"))
    assert html.returncode == 0, html.stderr
    assert "Failed cells" in (tmp_path / "r.html").read_text()


@pytest.mark.slow
def test_bad_options_are_one_sentence_and_exit_2(tmp_path: Path) -> None:
    for args in (["--seeds", "one"], ["--tasks", "nil"], ["--protocol", "dev"], ["--mode", "lenient"]):
        result = klue("benchmark", "--model", "classic", "--out", str(tmp_path), *args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("klue: error:")
    assert klue("report", str(tmp_path / "nothing")).returncode == 2


def test_quickstart_without_data_and_without_network_fails_with_one_sentence(tmp_path: Path) -> None:
    empty = tmp_path / "data"
    empty.mkdir()
    unreachable = "http://127.0.0.1:9/"  # the discard port: connection refused, as without a network
    result = klue("quickstart", "--data-dir", str(empty), "--out", str(tmp_path / "qs"),
                  env={"KLUE_DOWNLOAD_BASE_URL": unreachable})
    assert result.returncode == 3, result.stderr  # 3: a server that cannot be reached (README, exit codes)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("klue: error:") and "127.0.0.1" in last


def test_quickstart_runs_reports_and_names_tasks_it_cannot_run(tmp_path: Path, klue_data_dir: Path) -> None:
    from klue.io.locate import roots_from
    from klue.protocols import available

    roots = roots_from(str(klue_data_dir), None)
    without = [t.name for t in registry.all_tasks() if not available(t, roots)]
    if not without:
        pytest.skip("every task has data here")
    out = tmp_path / "qs"
    result = klue("quickstart", "--data-dir", str(klue_data_dir), "--tasks", without[0], "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "KLUE leaderboard" in result.stdout and "failed" in result.stdout
    assert f"✗ {without[0]}:" in result.stderr
    assert (out / "report.html").is_file() and (out / "benchmark.json").is_file()
