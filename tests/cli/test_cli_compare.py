"""`klue compare`: the table with a verdict, --json, and the one-line refusals (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_in_process import Done, klue_in_process
from run_fixtures import write_run


def klue(*args: str) -> Done:
    """In this process (tests/cli_in_process.py): the subject is the table, the JSON and the refusals, which
    `klue.cli.main` writes and exits with as on the command line. (A subprocess here, with no PYTHONPATH in its
    environment, ran the klue the shared virtualenv was installed from, not the one under test.)"""
    return klue_in_process(*args, environ={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})


def assert_refused(run: Done, phrase: str) -> None:
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("klue: error:") == 1 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert phrase in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_table_names_the_better_run_and_json_holds_every_number(tmp_path: Path) -> None:
    write_run(tmp_path / "a", "strong", 1, accuracy=0.9)
    write_run(tmp_path / "b", "weak", 1, accuracy=0.6)
    table = klue("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--resamples", "200")
    assert table.returncode == 0, table.stderr
    assert "A is better on accuracy (p=0.005)" in table.stdout and "95% CI" in table.stdout, table.stdout
    out = klue("compare", str(tmp_path / "a"), str(tmp_path / "a"), "--resamples", "100", "--json", "--seed", "4")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["resamples"], data["seed"]) == (100, 4)
    [task] = data["tasks"]
    assert (task["task"], task["n_examples"], task["n_units"]) == ("nli", 300, 100)
    for metric in task["metrics"]:
        assert metric["difference"] == 0.0 and metric["p_value"] == 1.0 and metric["p_bootstrap"] == 1.0
        assert metric["verdict"].startswith("no significant difference")
        assert metric["a"] == metric["b"] and metric["a"]["interval"][0] <= metric["a"]["value"]


def test_refuses_other_evaluation_sets_and_metric_modes(tmp_path: Path) -> None:
    write_run(tmp_path / "a", "m", 1, accuracy=0.8)
    write_run(tmp_path / "other", "m", 1, accuracy=0.8, guid_prefix="other")
    write_run(tmp_path / "corrected", "m", 1, accuracy=0.8, mode="corrected")
    assert_refused(klue("compare", str(tmp_path / "a"), str(tmp_path / "other")), "different evaluation sets")
    assert_refused(klue("compare", str(tmp_path / "a"), str(tmp_path / "corrected")), "different metric modes")


def test_help_explains_the_run_forms() -> None:
    result = klue("compare", "--help")
    assert result.returncode == 0, result.stderr
    assert "BENCHDIR::MODEL" in result.stdout and "--resamples" in result.stdout and "--json" in result.stdout
