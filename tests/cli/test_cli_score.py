"""`klue score` from the command line: JSON and table output, options, exit code 2 on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

KLUE = [sys.executable, "-c", "from klue.cli import main; main()"]


def klue(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | {"COLUMNS": "200"}
    return subprocess.run([*KLUE, *args], check=False, capture_output=True, text=True, timeout=120, env=env)


def test_help_documents_the_options() -> None:
    result = klue("score", "--help")
    assert result.returncode == 0, result.stderr
    for option in ("--task", "--gold", "--predictions", "--relation-list", "--mode", "--json", "--gold-format"):
        assert option in result.stdout


def test_json_output_has_metrics_at_the_top_level(klue_data_dir: Path, shared_data_dir: Path) -> None:
    result = klue("score", "--task", "klue-dp", "--gold", str(klue_data_dir / "klue-dp-v1.1/klue-dp-v1.1_dev.tsv"),
                  "--predictions", str(shared_data_dir / "scoring-cases/dp/pred_1.json.gz"), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["task"] == "dp" and out["mode"] == "official" and out["n_examples"] == 2000
    for metric in ("uas_macro_f1", "las_macro_f1", "uas_micro_f1", "las_micro_f1", "uas", "las"):
        assert isinstance(out[metric], float)
    assert "las_f1_per_label" in out


def test_corrected_mode_and_relation_list(shared_data_dir: Path) -> None:
    cases = shared_data_dir / "scoring-cases"
    result = klue("score", "--task", "re", "--gold", str(cases / "re/gold.json"), "--predictions",
                  str(cases / "re/pred_1.json.gz"), "--relation-list", str(cases / "re/relation_list.json"),
                  "--mode", "corrected", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["mode"] == "corrected" and set(out["f1_per_relation"]) <= set(out["auprc_per_relation"])


def test_table_output_and_gold_format(shared_data_dir: Path) -> None:
    cases = shared_data_dir / "scoring-cases/mrc"
    result = klue("score", "--task", "mrc", "--gold", str(cases / "gold_edge.json"), "--gold-format",
                  "unchecked-offsets", "--predictions", str(cases / "pred_edge.json.gz"))
    assert result.returncode == 0, result.stderr
    assert "exact_match" in result.stdout and "rouge_w" in result.stdout and "per_question_type" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--task", "nerr"], "Did you mean 'ner'"),
    (["--task", "ner", "--mode", "lenient"], "--mode must be one of"),
])
def test_bad_options_exit_2(shared_data_dir: Path, args: list[str], message: str) -> None:
    cases = shared_data_dir / "scoring-cases/ynat"
    result = klue("score", "--gold", str(cases / "gold.json"), "--predictions", str(cases / "pred_1.json.gz"), *args)
    assert result.returncode == 2
    assert message in result.stderr


def test_bad_predictions_exit_2_naming_the_guids(shared_data_dir: Path, tmp_path: Path) -> None:
    cases = shared_data_dir / "scoring-cases/wos"
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"guid": "nobody-0", "state": []}) + "\n", encoding="utf-8")
    result = klue("score", "--task", "wos", "--gold", str(cases / "gold.json"), "--predictions", str(predictions))
    assert result.returncode == 2
    assert "klue: error:" in result.stderr and "158 gold examples have no prediction" in result.stderr
    assert "'nobody-0'" in result.stderr


def test_score_imports_no_heavy_library_and_is_fast(klue_data_dir: Path, shared_data_dir: Path) -> None:
    """`klue score` on the full NER dev set in a fresh process: no torch, sklearn, scipy or seqeval import
    (each costs seconds to start), and the whole call well under the 2 s budget on an idle machine (the
    bound here is looser because the test suite runs tests in parallel)."""
    import time

    code = (
        "import sys\n"
        "from klue.cli import app\n"
        "try:\n"
        "    app(sys.argv[1:])\n"
        "except SystemExit as done:\n"
        "    assert done.code in (0, None), done.code\n"
        "heavy = sorted(m for m in ('torch', 'sklearn', 'scipy', 'seqeval', 'transformers') if m in sys.modules)\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    args = ["score", "--task", "ner", "--gold", str(klue_data_dir / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv"),
            "--predictions", str(shared_data_dir / "scoring-cases" / "ner" / "pred_1.json.gz"), "--json"]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, check=False)
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stderr
    assert json.loads(done.stdout)["entity_macro_f1"] > 0
    assert elapsed < 6.0, elapsed
