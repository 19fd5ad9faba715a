"""`klue train` says how many warnings the readers gave on its data, shows the first few and keeps all of
them beside the results (`data_warnings.txt`), as `klue score` shows them; a clean rerun removes the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from klue.cli import app
from klue.tasks.nli import records as nli

pytest.importorskip("kiwipiepy", reason="the NLI baseline needs Kiwi: pip install 'klue[baselines]'")
runner = CliRunner()
DATA_WARNINGS_FILE = "data_warnings.txt"  # klue.results.DATA_WARNINGS_FILE, spelled out: the name is the contract


def _pairs(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"guid": f"klue-nli-v1_train_{i:05d}", "source": "airbnb", "premise": f"전제 문장 {i // 3}입니다",
             "hypothesis": f"{'아니' if i % 3 == 2 else ''} 가설 {i}입니다", "gold_label": nli.LABELS[i % 3],
             "author": nli.LABELS[i % 3], "label2": "neutral", "label3": "neutral", "label4": "entailment",
             "label5": "contradiction", **extra} for i in range(n)]


@pytest.mark.slow
def test_train_shows_the_readers_warnings_and_keeps_them_all(tmp_path: Path) -> None:
    data = tmp_path / "mine.json"
    data.write_text(json.dumps(_pairs(60, note="kept by the annotator"), ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "run"
    args = ["train", "--task", "nli", "--model", "classic", "--train", str(data), "--eval-fraction", "0.3",
            "--output", str(out)]
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert f"60 warnings while reading {data}:" in result.stderr
    shown = [line for line in result.stderr.splitlines() if "unknown fields ignored: note" in line]
    assert len(shown) == 5 and "... and 55 more" in result.stderr
    assert f"all 60 warnings are kept in {out / DATA_WARNINGS_FILE}" in result.stderr
    kept = (out / DATA_WARNINGS_FILE).read_text(encoding="utf-8").splitlines()
    assert len(kept) == 60 and all(line.startswith(f"{data}:$[") and "warning: unknown fields" in line
                                   for line in kept)

    data.write_text(json.dumps(_pairs(60), ensure_ascii=False), encoding="utf-8")  # fixed: no warnings
    again = runner.invoke(app, [*args[:-1], str(out)], env={"COLUMNS": "300"})
    assert again.exit_code == 0, again.output
    assert "warnings" not in again.stderr and not (out / DATA_WARNINGS_FILE).exists()
