"""The scan on real data: KLUE dev sets (KLUE_DATA_DIR) against real Korean corpora built from the files beside
them (KLUE_EXTRA_DATA_DIR); skipped where they are absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from klue import registry
from klue.cli import app
from klue.contamination.examples import examples_of
from klue.contamination.units import Settings, units
from klue.tasks.reading import read

pytestmark = pytest.mark.realdata
runner = CliRunner()
KORQUAD = "korean/korquad-v1/KorQuAD_v1.0_dev.json"


def korquad_contexts(shared_data_dir: Path, out: Path, limit: int = 200) -> list[str]:
    data = json.loads((shared_data_dir / KORQUAD).read_text(encoding="utf-8"))
    contexts = list(dict.fromkeys(p["context"] for a in data["data"] for p in a["paragraphs"]))[:limit]
    return contexts


def test_copied_dev_sentences_are_named_with_their_match(klue_data_dir: Path, shared_data_dir: Path,
                                                         tmp_path: Path) -> None:
    task = registry.get("sts")
    records = read(task, klue_data_dir / "klue-sts-v1.1/klue-sts-v1.1_dev.json", purpose="score").records
    examples = examples_of(task, records)
    copied = examples[10:40]
    # real Wikipedia paragraphs with 30 dev sentences planted inside them, one a line
    lines = korquad_contexts(shared_data_dir, tmp_path)
    for i, example in enumerate(copied):
        lines.insert(5 * i + 1, f"{lines[5 * i]} {example.input[0]}")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in lines), encoding="utf-8")
    out = tmp_path / "out"
    result = runner.invoke(app, ["contamination", "scan", "--corpus", str(corpus), "--tasks", "sts", "--out",
                                 str(out), "--data-dir", str(klue_data_dir)])
    assert result.exit_code == 0, result.output
    rows = {r["guid"]: r for r in map(json.loads, (out / "sts" / "examples.jsonl").read_text("utf-8").splitlines())}
    assert len(rows) == len(examples)
    long_enough = [e for e in copied if len(units(e.input[0], Settings())) >= 8]
    assert long_enough
    for example in long_enough:
        row = rows[example.guid]
        assert row["dirty_input"] and row["longest_match"] >= len(units(example.input[0], Settings())), row
        planted_line = lines.index(next(t for t in lines if t.endswith(example.input[0]))) + 1
        assert row["first_match"]["line"] <= planted_line
    assert all(rows[g]["dirty_input"] is False for g in rows if g not in {e.guid for e in copied}) or \
        sum(r["dirty_input"] for r in rows.values()) >= len(long_enough)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["tasks"]["sts"]["source"]["git_blob"] == task.file("dev").git_blob  # type: ignore[union-attr]


@pytest.mark.slow  # reads the NER dev file (5,000 sentences)
def test_ner_dev_against_ner_train_sentences(klue_data_dir: Path, shared_data_dir: Path, tmp_path: Path) -> None:
    """Train/dev overlap: KLUE NER train sentences (the first 5,000, as a JSONL corpus) against the NER dev set,
    with the GPT-3 method beside the default; every hit names its train line."""
    task = registry.get("ner")
    train = read(task, shared_data_dir / "klue-partial/klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv",
                 purpose="score").records
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps({"text": r.text}, ensure_ascii=False) + "\n" for r in train), "utf-8")
    for options in ([], ["--unit", "word", "--n", "13", "--normalise", "gpt3"]):
        out = tmp_path / f"out{len(options)}"
        result = runner.invoke(app, ["contamination", "scan", "--corpus", str(corpus), "--tasks", "ner", "--out",
                                     str(out), "--data-dir", str(klue_data_dir), *options])
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in (out / "ner" / "examples.jsonl").read_text("utf-8").splitlines()]
        assert len(rows) == 5000
        for row in (r for r in rows if r["dirty_input"]):
            line = row["first_match"]["line"]
            assert row["first_match"]["text"].replace(" ", "") in \
                "".join(units(train[line - 1].text, Settings("char", 1, "gpt3" if options else "klue")))
