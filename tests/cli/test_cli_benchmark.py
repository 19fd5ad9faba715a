"""`klue benchmark`, `klue report` and `klue quickstart` from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from klue import registry

KLUE = [sys.executable, "-c", "from klue.cli import main; main()"]


def klue(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env_free = {"KLUE_DATA_DIR": "", "KLUE_EXTRA_DATA_DIR": ""}
    import os

    env = {k: v for k, v in os.environ.items() if k not in env_free} | {"COLUMNS": "200", "OMP_NUM_THREADS": "1"}
    return subprocess.run([*KLUE, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def test_help_explains_each_command() -> None:
    for command in ("benchmark", "report", "quickstart"):
        result = klue(command, "--help")
        assert result.returncode == 0, result.stderr
        assert "--out" in result.stdout or "DIRECTORY" in result.stdout


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


def test_bad_options_are_one_sentence_and_exit_2(tmp_path: Path) -> None:
    for args in (["--seeds", "one"], ["--tasks", "nil"], ["--protocol", "dev"], ["--mode", "lenient"]):
        result = klue("benchmark", "--model", "classic", "--out", str(tmp_path), *args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("klue: error:")
    assert klue("report", str(tmp_path / "nothing")).returncode == 2
