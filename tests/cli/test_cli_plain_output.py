"""Output where no terminal reads it (a log, a pipe): no message is wrapped, so a path or a number is never
cut across lines (rich wrapped at 80 columns: "results in" on one line, the path on the next)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import klue
from klue.tasks.nli import records as nli

pytest.importorskip("kiwipiepy", reason="the NLI baseline needs Kiwi: pip install 'klue[baselines]'")


@pytest.mark.slow
def test_train_into_a_log_keeps_each_message_on_one_line(tmp_path: Path) -> None:
    pairs = [{"guid": f"klue-nli-v1_train_{i:05d}", "source": "airbnb", "premise": f"전제 문장 {i // 3}입니다",
              "hypothesis": f"가설 {i}입니다", "gold_label": nli.LABELS[i % 3], "author": nli.LABELS[i % 3],
              "label2": "neutral", "label3": "neutral", "label4": "entailment", "label5": "contradiction"}
             for i in range(45)]
    data = tmp_path / "pairs.json"
    data.write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / ("a-directory-name-long-enough-to-need-wrapping-" * 3) / "run"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(Path(klue.__file__).parents[1])}
    with (tmp_path / "train.log").open("w", encoding="utf-8") as log:  # stderr into a file, as a scheduler does
        done = subprocess.run([sys.executable, "-c", "from klue.cli import main; main()", "train", "--task", "nli",
                               "--model", "classic", "--train", str(data), "--eval-fraction", "0.3", "--output",
                               str(out)], stdout=subprocess.PIPE, stderr=log, text=True, env=env, timeout=600,
                              check=False)
    logged = (tmp_path / "train.log").read_text(encoding="utf-8")
    assert done.returncode == 0, logged[-3000:]
    summary = [line for line in logged.splitlines() if "eval examples" in line]
    assert len(summary) == 1 and summary[0].endswith(f"results in {out / 'results.json'}"), logged
    assert "│ accuracy │" in done.stdout  # the table, each row on its line
