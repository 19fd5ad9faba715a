"""`klue score` from the command line: JSON and table output, options, exit code 2 on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_in_process import Done, klue_in_process


def klue(*args: str) -> Done:
    """In this process (tests/cli_in_process.py): the subject is what `klue score` prints and its exit code;
    test_score_imports_no_heavy_library_and_is_fast runs its own subprocess, where imports are what it tests."""
    return klue_in_process(*args, environ=dict(os.environ) | {"COLUMNS": "200"})


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


def _jsonl(path: Path, objects: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects), encoding="utf-8")
    return path


@pytest.mark.slow
def test_impossible_predictions_exit_2_naming_the_guid(klue_data_dir: Path, shared_data_dir: Path,
                                                       tmp_path: Path) -> None:
    dp_gold = klue_data_dir / "klue-dp-v1.1/klue-dp-v1.1_dev.tsv"
    from klue import registry
    from klue.tasks.reading import read

    task = registry.get("dp")
    objects = [task.prediction_to_json(task.gold_prediction(r)) for r in read(task, dp_gold, purpose="score").records]
    objects[3]["heads"][0] = 99
    objects[8]["heads"][1] = -1
    result = klue("score", "--task", "dp", "--gold", str(dp_gold), "--predictions",
                  str(_jsonl(tmp_path / "dp.jsonl", objects)))
    assert result.returncode == 2
    assert f"{objects[3]['guid']}: word 1: head 99 is outside" in result.stderr
    assert f"{objects[8]['guid']}: word 2: head -1 is outside" in result.stderr
    re_gold = shared_data_dir / "scoring-cases/re/gold.json"
    items = json.loads(re_gold.read_text(encoding="utf-8"))
    probs = [[-0.1] + [1.1 / 29] * 29] + [[1 / 30] * 30] * (len(items) - 1)
    predictions = [{"guid": r["guid"], "label": r["label"], "probs": p} for r, p in zip(items, probs)]
    result = klue("score", "--task", "re", "--gold", str(re_gold), "--predictions",
                  str(_jsonl(tmp_path / "re.jsonl", predictions)))
    assert result.returncode == 2
    assert f"line 1: {items[0]['guid']}: `probs` are probabilities between 0 and 1, found -0.1" in result.stderr


def test_unnormalised_probabilities_warn_naming_the_guids(shared_data_dir: Path) -> None:
    cases = shared_data_dir / "scoring-cases/re"
    result = klue("score", "--task", "re", "--gold", str(cases / "gold.json"), "--predictions",
                  str(cases / "pred_2.json.gz"), "--relation-list", str(cases / "relation_list.json"), "--json")
    assert result.returncode == 0, result.stderr
    assert "269 predictions have `probs` that do not sum to 1" in result.stderr
    assert "'klue-re-v1_dev_00000'" in result.stderr and "(first 5 of 269)" in result.stderr


def test_mrc_gold_whose_offsets_miss_the_answer_scores_with_warnings(shared_data_dir: Path) -> None:
    cases = shared_data_dir / "scoring-cases/mrc"
    result = klue("score", "--task", "mrc", "--gold", str(cases / "gold_edge.json"), "--predictions",
                  str(cases / "pred_edge.json.gz"), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["n_examples"] == 19
    assert "17 warnings while reading" in result.stderr
    assert "edge-mrc_000: context[3:10] is 'e cases', not the answer text '《서울의 봄》'" in result.stderr
    validated = klue("data", "validate", "--task", "mrc", str(cases / "gold_edge.json"))
    assert validated.returncode == 2 and "17 errors" in validated.stdout


KORSTS = ("genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\n"
          "main-captions\tMSRvid\t2012test\t0000\t5.000\t한 남자가 춤을 춘다.\t남자가 춤을 춘다.\n"
          "main-captions\tMSRvid\t2012test\t0002\t1.250\t아이가 말을 탄다.\t개가 달린다.\n")
CONLLU = ("# sent_id = c1\n1\t김철수\t김철수\tPROPN\tNNP\t_\t0\troot\t_\t_\n"
          "2\t씨\t씨\tNOUN\tNNB\t_\t1\tflat:name\t_\t_\n\n")
PERFECT = {"sts": [{"guid": "korsts-dev_00000", "score": 5.0}, {"guid": "korsts-dev_00001", "score": 1.25}],
           "dp": [{"guid": "c1", "heads": [0, 1], "deprels": ["root", "flat:name"]}]}


@pytest.mark.parametrize("task, relative, text, fmt", [
    ("sts", "korsts/dev.tsv", KORSTS, "korsts"),
    ("dp", "ud/dev.conllu", CONLLU, "conllu"),
])
@pytest.mark.slow
def test_the_gold_format_is_inferred_and_said(tmp_path: Path, task: str, relative: str, text: str,
                                              fmt: str) -> None:
    gold = tmp_path / relative
    gold.parent.mkdir()
    gold.write_text(text, encoding="utf-8")
    predictions = _jsonl(tmp_path / "p.jsonl", PERFECT[task])
    result = klue("score", "--task", task, "--gold", str(gold), "--predictions", str(predictions), "--json")
    assert result.returncode == 0, result.stderr
    assert f"reading --gold as {task} '{fmt}'" in result.stderr
    assert json.loads(result.stdout)["gold_format"] == fmt
    # named so that nothing tells its format: its content does
    plain = tmp_path / "plain" / "dev.tsv"
    plain.parent.mkdir()
    plain.write_text(text, encoding="utf-8")
    result = klue("score", "--task", task, "--gold", str(plain), "--predictions", str(predictions), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["gold_format"] == fmt
    # named wrongly: the error says which --gold-format reads it
    result = klue("score", "--task", task, "--gold", str(plain), "--gold-format", "official", "--predictions",
                  str(predictions))
    assert result.returncode == 2
    assert f"pass --gold-format {fmt}" in result.stderr.splitlines()[0]
    assert len(result.stderr.splitlines()) <= 8  # the hint, the first errors and their count, not thousands
    assert klue("score", "--task", task, "--gold", str(plain), "--gold-format", fmt, "--predictions",
                str(predictions)).returncode == 0
