"""`klue embed` from the command line: tasks that do not apply are refused with the reason, and a benchmark
with a CPU baseline, a fine-tuned encoder and an embedding model renders one report."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from cli_in_process import Done, klue_in_process
from fake_openai import FakeOpenAI
from klue import registry
from klue.cli.embed import applicable_tasks
from klue.errors import DataError
from klue.scoring import RunRequest


def klue(*args: str) -> Done:
    """In this process (tests/cli_in_process.py), without the caller's KLUE_* settings: the subject is the
    refusals and the report, and each subprocess imported torch again."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KLUE_")} | {"COLUMNS": "200",
                                                                                    "OMP_NUM_THREADS": "1"}
    return klue_in_process(*args, environ=clean)


def test_a_task_that_does_not_apply_is_refused_by_name_with_the_reason(tmp_path: Path) -> None:
    task = next(t for t in registry.all_tasks() if not t.embedding)
    result = klue("embed", "--model", "emb:openai:m@http://127.0.0.1:9/v1", "--tasks", task.name,
                  "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert f"{task.name}: {task.no_embedding}" in " ".join(result.stderr.split())
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_a_malformed_spec_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    result = klue("embed", "--model", "emb:openai:no-url", "--out", str(tmp_path))
    assert result.returncode == 2 and "emb:openai:MODEL@http://HOST:PORT/v1" in result.stderr


def test_a_model_directory_that_is_not_there_is_refused_before_any_cell(tmp_path: Path) -> None:
    """As `klue llm --model hf:/nonexistent`: exit 2 at once, no cell run, nothing written."""
    for command, spec in (("embed", "emb:/nonexistent"), ("llm", "hf:/nonexistent"), ("benchmark", "emb:/nonexistent")):
        result = klue(command, "--model", spec, "--tasks", "sts", "--out", str(tmp_path / command))
        assert result.returncode == 2, (command, result.stderr[-2000:])
        assert result.stderr.startswith(f"klue: error: {spec}: no such directory") and "cells run" not in result.stderr
        assert not (tmp_path / command).exists()


def test_all_means_every_task_that_applies() -> None:
    names, left_out = applicable_tasks("all")
    assert set(names) == {t.name for t in registry.all_tasks() if t.embedding}
    assert set(left_out) == {t.name for t in registry.all_tasks() if not t.embedding}
    with pytest.raises(DataError, match="klue embed takes"):
        applicable_tasks(",".join([names[0], left_out[0]]))


@pytest.mark.slow
@pytest.mark.realdata
def test_a_classic_an_encoder_and_an_embedding_row_make_one_report(tmp_path: Path, klue_data_dir: Path,
                                                                   shared_data_dir: Path) -> None:
    """STS on 88 KorSTS pairs -> the first 30 KLUE-STS dev pairs: the CPU baseline, a tiny encoder trained from
    scratch, and an embedding model behind a fake server, in one benchmark directory, then `klue report`."""
    from klue.models.tiny import make_tiny_model_dir

    rows = list(csv.reader((shared_data_dir / "korean" / "korsts" / "sts-dev.tsv").open(encoding="utf-8"),
                           delimiter="\t", quoting=csv.QUOTE_NONE))
    train = tmp_path / "korsts" / "sts-small.tsv"
    train.parent.mkdir()
    train.write_text("\n".join("\t".join(row) for row in rows[:89]) + "\n", encoding="utf-8")
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps(json.loads((klue_data_dir / "klue-sts-v1.1" / "klue-sts-v1.1_dev.json")
                                         .read_text(encoding="utf-8"))[:30], ensure_ascii=False), encoding="utf-8")
    encoder = make_tiny_model_dir(tmp_path / "tiny", "bert", [r[5] for r in rows[1:300]] + [r[6] for r in rows[1:300]],
                                  vocab_size=500, hidden_size=32, layers=1, heads=2, intermediate_size=64, max_len=128)
    server = FakeOpenAI(model_id="fake-embedder", normalise=True)
    out = tmp_path / "bench"
    try:
        result = klue("benchmark", "--model", "classic", "--model", str(encoder), "--model",
                      f"emb:openai:{server.model_id}@{server.url}", "--tasks", "sts", "--train", str(train),
                      "--selection", str(train), "--eval", str(dev), "--out", str(out), "--jobs", "0")
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    report = klue("report", str(out), "--format", "md")
    assert report.returncode == 0, report.stderr
    lines = {line.split(" | ")[1]: line for line in report.stdout.splitlines() if line.startswith("| ")}
    embedding = next(line for name, line in lines.items() if "emb:openai" in name)
    assert any("classic" in name for name in lines) and any("tiny" in name for name in lines)
    n_not_applicable = sum(1 for t in registry.all_tasks() if not t.embedding)
    n_applicable = len(registry.all_tasks()) - n_not_applicable
    assert embedding.count("not applicable") == n_not_applicable
    assert f"(partial 1/{n_applicable} applicable)" in embedding
    assert "not applicable: the model's family does not apply to the task" in report.stdout
    html = klue("report", str(out), "-o", str(tmp_path / "report.html"))
    assert html.returncode == 0, html.stderr
    assert "not applicable" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_a_benchmark_plans_no_cell_where_the_family_does_not_apply(tmp_path: Path) -> None:
    from klue.benchmark.runner import BenchmarkPlan

    names = tuple(t.name for t in registry.all_tasks())
    plan = BenchmarkPlan(names, ("classic", "emb:openai:m@http://127.0.0.1:9/v1"), (1,), tmp_path)
    cells = plan.cells()
    assert sum(c.model == "classic" for c in cells) == len(names)
    assert {c.task for c in cells if c.model != "classic"} == {t.name for t in registry.all_tasks() if t.embedding}
    assert {(task, why) for task, _, why in plan.not_applicable()} == {
        (t.name, t.no_embedding) for t in registry.all_tasks() if not t.embedding}


def test_a_done_cell_made_with_another_prompt_is_refused(tmp_path: Path) -> None:
    from fake_embeddings import ToyBackend
    from klue.benchmark.cells import CellSpec
    from klue.cli.embed import check_done_cells
    from klue.embed.run import EmbedSettings, run
    from klue.protocols import ProtocolData
    from klue.tasks.ynat.records import LABELS, YnatRecord

    records = [YnatRecord(f"g{i}", f"제목 {LABELS[i % 7]} {i}", LABELS[i % 7]) for i in range(28)]
    data = ProtocolData("local:x", False, "synthetic", records[:21], records[21:], None, ())
    run(RunRequest(registry.get("ynat"), "emb:toy", data, 1, tmp_path, "official"), ToyBackend(), EmbedSettings("query: ", None,
                                                                                                      False))
    cell = CellSpec("ynat", "emb:toy", 1, "auto", "official", str(tmp_path))
    check_done_cells([cell], "query: ", None)  # the same prompt: the cell is simply done
    check_done_cells([cell], None, None)  # no prompt asked: the model's own, whatever it was
    with pytest.raises(DataError, match="was made with --prompt 'query: ', not 'passage: '"):
        check_done_cells([cell], "passage: ", None)
