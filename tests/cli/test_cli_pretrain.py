"""`klue pretrain tokenizer | pii | mlm` through the real CLI, and `klue train` on the pretrained model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from klue.cli import app

runner = CliRunner()


def test_pretrain_help_lists_commands() -> None:
    result = runner.invoke(app, ["pretrain", "--help"])
    assert result.exit_code == 0
    for name in ("tokenizer", "pii", "mlm"):
        assert name in result.output
        assert runner.invoke(app, ["pretrain", name, "--help"]).exit_code == 0


def test_bad_options_are_data_errors(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("가나다\n", encoding="utf-8")
    result = runner.invoke(app, ["pretrain", "tokenizer", "-c", str(corpus), "-o", str(tmp_path / "t"),
                                 "--algorithm", "sentencepiece"])
    assert result.exit_code != 0 and "unknown algorithm" in str(result.exception or result.output)
    result = runner.invoke(app, ["pretrain", "pii", "-i", str(corpus), "-o", str(tmp_path / "p"), "--kinds", "zip"])
    assert result.exit_code != 0


def test_pii_command_writes_counts_only(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("홍길동 씨의 연락처는 010-1234-5678입니다.\n", encoding="utf-8")
    result = runner.invoke(app, ["pretrain", "pii", "-i", str(source), "-o", str(tmp_path / "out"), "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "010-1234-5678" not in result.output and "홍길동" not in result.output
    report = json.loads((tmp_path / "out" / "pii_report.json").read_text(encoding="utf-8"))
    assert report["counts"]["phone"] == 1 and report["counts"]["name"] == 1
    text = (tmp_path / "out" / "in.txt").read_text(encoding="utf-8")
    assert "010-1234-5678" not in text and "홍길동" not in text and "연락처는 010-" in text


@pytest.mark.realdata
def test_tokenizer_mlm_then_klue_train(tmp_path: Path, klue_data_dir: Path) -> None:
    torch.set_num_threads(1)
    rows = json.loads((klue_data_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(r["hypothesis"] for r in rows[:400]) + "\n", encoding="utf-8")
    tok = tmp_path / "tok"
    result = runner.invoke(app, ["pretrain", "tokenizer", "-c", str(corpus), "-o", str(tok), "--vocab-size", "1500",
                                 "--algorithm", "wordpiece", "--pretokenize", "morpheme"])
    assert result.exit_code == 0, result.output
    card = json.loads((tok / "klue_tokenizer.json").read_text(encoding="utf-8"))
    assert card["pretokenize"] == "morpheme" and card["actual_vocab_size"] <= 1500
    model = tmp_path / "model"
    result = runner.invoke(app, ["pretrain", "mlm", "--tokenizer", str(tok), "-c", str(corpus), "-o", str(model),
                                 "--config", "tiny", "--max-steps", "4", "--batch-size", "8", "--max-len", "64",
                                 "--log-every", "2", "--cpu", "--whole-word", "word"])
    assert result.exit_code == 0, result.output
    assert (model / "model.safetensors").is_file()
    out = tmp_path / "run"
    result = runner.invoke(app, ["train", "--task", "nli", "--model", str(model), "--protocol", "local:dev-80-20",
                                 "--data-dir", str(klue_data_dir), "--output", str(out), "max_steps=2",
                                 "batch_size=8", "max_len=64", "evals_per_epoch=0", "progress=false"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["training"]["model_source"] == "pretrained"
