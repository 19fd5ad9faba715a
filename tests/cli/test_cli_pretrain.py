"""`klue pretrain tokenizer | pii | mlm` through the real CLI, and `klue train` on the pretrained model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from cli_in_process import Done, klue_in_process
from klue.cli import app
from klue.training.engine import mixed_precision_for

runner = CliRunner()
KOREAN = "가나다 라마바\n한국어 문장입니다.\n"


def klue(*args: str) -> Done:
    """In this process (tests/cli_in_process.py): the subject is each command's refusals and files."""
    return klue_in_process(*args)


def bad_input(tmp_path: Path, case: str) -> Path:
    """A corpus path that cannot be read as UTF-8 text, by `case`."""
    path = tmp_path / f"{case}.txt"
    if case == "cp949":
        path.write_bytes(KOREAN.encode("cp949"))
    elif case == "utf16":
        path.write_bytes(KOREAN.encode("utf-16"))
    elif case == "nul":
        path.write_bytes(("첫 줄\n둘째\0줄\n").encode())
    elif case == "directory":
        path.mkdir()
    return path


@pytest.mark.parametrize("command", ["pii", "tokenizer"])
@pytest.mark.parametrize(("case", "expected"), [
    ("cp949", ":line 1: bytes that are not UTF-8"), ("utf16", "UTF-16 (it starts with a byte-order mark)"),
    ("nul", ":line 2: a NUL byte"), ("missing", ": cannot read file: No such file"),
    ("directory", ": is a directory, not a file"),
])
def test_unreadable_corpus_exits_2_naming_the_file(tmp_path: Path, command: str, case: str, expected: str) -> None:
    path = bad_input(tmp_path, case)
    if command == "tokenizer" and case == "directory":  # a corpus directory is read as shards: here none
        expected = ": a corpus directory with no files in it"
    options = ["-i", str(path)] if command == "pii" else ["-c", str(path), "--pretokenize", "whitespace"]
    result = klue("pretrain", command, *options, "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"klue: error: {path}") and expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    if case == "cp949":
        assert f"it decodes as CP949 (EUC-KR), convert with: iconv -f cp949 -t utf-8 {path} > {path}.utf8" \
            in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_tokenizer_vocab_size_below_the_alphabet_exits_2_with_the_minimum(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text(KOREAN * 3, encoding="utf-8")
    result = klue("pretrain", "tokenizer", "-c", str(corpus), "-o", str(tmp_path / "t"), "--vocab-size", "20",
                  "--pretokenize", "whitespace", "--min-frequency", "1")
    assert result.returncode == 2, result.stderr
    assert "--vocab-size 20 is below the smallest vocabulary this corpus allows" in result.stderr
    minimum = result.stderr.rsplit("use --vocab-size ", 1)[1].split()[0]
    result = klue("pretrain", "tokenizer", "-c", str(corpus), "-o", str(tmp_path / "t"), "--vocab-size", minimum,
                  "--pretokenize", "whitespace", "--min-frequency", "1")
    assert result.returncode == 0, result.stderr
    assert f"(vocabulary {minimum})" in result.stdout


def test_pretrain_help_lists_commands() -> None:
    result = runner.invoke(app, ["pretrain", "--help"])
    assert result.exit_code == 0
    for name in ("tokenizer", "pii", "prepare", "mlm"):
        assert name in result.output
        assert runner.invoke(app, ["pretrain", name, "--help"]).exit_code == 0


def test_bad_options_are_data_errors(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("가나다\n", encoding="utf-8")
    result = runner.invoke(app, ["pretrain", "tokenizer", "-c", str(corpus), "-o", str(tmp_path / "t"),
                                 "--algorithm", "sentencepiece"])
    assert result.exit_code != 0 and "--algorithm 'sentencepiece': one of wordpiece, bpe, unigram" in str(
        result.exception or result.output)  # klue.io.choices.choice_of: the option, the value, the choices
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


def test_sampled_tokenizer_prepare_then_mlm_from_shards(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    words = ["서울에서", "학교를", "다녔다", "부산에서", "회사를", "공원을", "걸었다", "고양이가", "잠을", "잔다"]
    corpus = tmp_path / "corpus.txt.gz"
    import gzip

    lines = [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(3 + i % 9)) for i in range(600)]
    corpus.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    cards = []
    for name in ("tok", "tok2"):
        result = runner.invoke(app, ["pretrain", "tokenizer", "-c", str(corpus), "-o", str(tmp_path / name),
                                     "--vocab-size", "150", "--pretokenize", "whitespace", "--sample", "200",
                                     "--seed", "3", "--min-frequency", "1"])
        assert result.exit_code == 0, result.output
        cards.append(json.loads((tmp_path / name / "klue_tokenizer.json").read_text(encoding="utf-8")))
    assert cards[0]["n_texts"] == 200 and cards[0]["sample_seed"] == 3
    assert (tmp_path / "tok" / "tokenizer.json").read_bytes() == (tmp_path / "tok2" / "tokenizer.json").read_bytes()
    shards = tmp_path / "shards"
    result = runner.invoke(app, ["pretrain", "prepare", "--tokenizer", str(tmp_path / "tok"), "-c", str(corpus),
                                 "-o", str(shards), "--max-len", "32", "--whole-word", "word", "--shard-texts", "250"])
    assert result.exit_code == 0, result.output
    assert "3 shards: 600 texts" in result.output
    model = tmp_path / "model"
    result = runner.invoke(app, ["pretrain", "mlm", "--data", str(shards), "-o", str(model), "--max-steps", "3",
                                 "--batch-size", "4", "--log-every", "1", "--cpu"])
    assert result.exit_code == 0, result.output
    summary = json.loads((model / "pretrain_summary.json").read_text(encoding="utf-8"))
    assert summary["data"] == str(shards) and summary["settings"]["max_len"] == 32
    assert summary["settings"]["whole_word"] == "word"
    assert summary["mixed_precision"] == mixed_precision_for("auto", cpu=True)  # the CLI's default on this CPU
    log = [json.loads(line) for line in (model / "train_log.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3] and all(r["tokens_per_s"] > 0 for r in log)
    result = klue("pretrain", "mlm", "--data", str(tmp_path), "-o", str(tmp_path / "m2"), "--cpu")
    assert result.returncode == 2 and "no manifest.json: not a directory of token shards" in result.stderr


@pytest.mark.realdata
@pytest.mark.slow
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
    # The first 601 dev pairs (whole premises) in the official layout: the pretrained model fine-tunes the same
    # way, evaluated on a fifth of the pairs.
    data = tmp_path / "data" / "klue-nli-v1.1"
    data.mkdir(parents=True)
    assert rows[600]["premise"] != rows[601]["premise"]
    (data / "klue-nli-v1.1_dev.json").write_text(json.dumps(rows[:601], ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "run"
    result = runner.invoke(app, ["train", "--task", "nli", "--model", str(model), "--protocol", "local:dev-80-20",
                                 "--data-dir", str(data.parent), "--output", str(out), "max_steps=2",
                                 "batch_size=8", "max_len=64", "evals_per_epoch=0", "progress=false"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["training"]["model_source"] == "pretrained"


def test_mlm_from_the_cli_and_from_python_have_the_same_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """One default (mixed precision: auto): the settings the CLI builds are those Python's defaults give."""
    from klue.pretraining import mlm

    given: list[mlm.MlmSettings] = []

    def capture(settings: mlm.MlmSettings) -> None:
        given.append(settings)
        raise SystemExit(0)

    monkeypatch.setattr(mlm, "pretrain", capture)
    (tmp_path / "tok").mkdir()
    corpus = tmp_path / "c.txt"
    corpus.write_text("한국어 문장\n", encoding="utf-8")
    result = runner.invoke(app, ["pretrain", "mlm", "--tokenizer", str(tmp_path / "tok"), "-c", str(corpus),
                                 "-o", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert given == [mlm.MlmSettings(tokenizer=tmp_path / "tok", model_config="tiny", corpus=[corpus],
                                     out=tmp_path / "m")]
    assert given[0].mixed_precision == "auto"
    assert runner.invoke(app, ["pretrain", "mlm", "--tokenizer", str(tmp_path / "tok"), "-c", str(corpus), "-o",
                               str(tmp_path / "m"), "--mixed-precision", "no"]).exit_code == 0
    assert given[1].mixed_precision == "no"
