"""`klue llm` into a log: plain progress lines as the work goes (a rich bar printed nothing until the end)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="the HTTP backend needs httpx: pip install 'klue[llm]'")

from cli_in_process import klue_in_process
from fake_openai import FakeOpenAI
from klue.tasks.nli import records as nli


@pytest.mark.slow
def test_llm_prints_plain_progress_lines_into_a_log(fake_server: Callable[..., FakeOpenAI], tmp_path: Path) -> None:
    server = fake_server(dialect=None)
    pairs = [{"guid": f"klue-nli-v1_dev_{i:05d}", "source": "airbnb", "premise": f"전제 문장 {i // 3} 입니다",
              "hypothesis": f"가설 {i} 입니다", "gold_label": nli.LABELS[i % 3], "author": nli.LABELS[i % 3],
              "label2": "neutral", "label3": "neutral", "label4": "entailment", "label5": "contradiction"}
             for i in range(40)]
    train, evaluation = tmp_path / "train.json", tmp_path / "eval.json"
    train.write_text(json.dumps(pairs[:9], ensure_ascii=False), encoding="utf-8")
    evaluation.write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "COLUMNS")}
    # in this process (tests/cli_in_process.py), its stderr a file as a log's would be: not a terminal
    run = klue_in_process("llm", "--model", f"openai:fake@{server.url}", "--tasks", "nli", "--train", str(train),
                          "--eval", str(evaluation), "--out", str(tmp_path / "out"), "--jobs", "0", environ=env)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line for line in run.stderr.splitlines() if line.startswith(f"nli · openai:fake@{server.url}: ")]
    counts = [line.split(": ")[1].split(" ")[0] for line in lines]
    assert counts == ["16/40", "32/40", "40/40"], run.stderr[-3000:]  # one per chunk of 16: each is 40% more
    assert "elapsed" in lines[0] and "ETA" in lines[0]
