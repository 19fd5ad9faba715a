"""Credentials in a server URL (`openai:MODEL@http://user:pass@host/v1`) are used to connect and appear on no
screen and in no file: results, predictions, outputs, manifest, caches, logs, error traces, directory names,
the report. The API key likewise (tests/llm/test_llm_openai.py checks its messages)."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="the HTTP backend needs httpx: pip install 'klue[llm]'")

import klue
from fake_openai import FakeOpenAI
from klue.tasks.nli import records as nli

SECRET = "s3cret-Pass"


def _pairs(n: int, split: str) -> list[dict[str, str]]:  # official-format NLI pairs
    return [{"guid": f"klue-nli-v1_{split}_{i:05d}", "source": "airbnb", "premise": f"전제 문장 {i // 3} 입니다",
             "hypothesis": f"가설 {i} 입니다", "gold_label": nli.LABELS[i % 3], "author": nli.LABELS[i % 3],
             "label2": "neutral", "label3": "neutral", "label4": "entailment", "label5": "contradiction"}
            for i in range(n)]


def _klue(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from klue.cli import main; main()", *args], capture_output=True,
                          text=True, env=env, timeout=600, check=False)


@pytest.mark.slow
def test_url_credentials_are_sent_and_never_shown_or_written(fake_server: Callable[..., FakeOpenAI],
                                                            tmp_path: Path) -> None:
    server = fake_server(dialect=None)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    good = f"openai:fake@{server.url.replace('http://', f'http://reader:{SECRET}@')}"
    gone = f"openai:fake@http://reader:{SECRET}@127.0.0.1:{closed}/v1"
    train, evaluation = tmp_path / "train.json", tmp_path / "eval.json"
    train.write_text(json.dumps(_pairs(12, "train"), ensure_ascii=False), encoding="utf-8")
    evaluation.write_text(json.dumps(_pairs(6, "dev"), ensure_ascii=False), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env |= {"PYTHONPATH": str(Path(klue.__file__).parents[1]), "COLUMNS": "300"}
    out = tmp_path / "bench"
    common = ("--tasks", "nli", "--train", str(train), "--eval", str(evaluation), "--out", str(out), "--jobs", "0")
    first = _klue("llm", "--model", good, *common, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    run = _klue("llm", "--model", good, "--model", gone, *common, env=env)
    assert run.returncode == 3, run.stderr[-3000:]  # the unreachable server stops the run before any cell
    assert run.stderr.count("klue: error:") == 1 and "cannot reach http://***@127.0.0.1:" in run.stderr
    report = _klue("report", str(out), "--format", "md", env=env)
    assert report.returncode == 0, report.stderr

    assert {s.headers.get("Authorization") for s in server.seen} == \
        {"Basic " + base64.b64encode(f"reader:{SECRET}".encode()).decode()}
    shown = first.stdout + first.stderr + run.stdout + run.stderr + report.stdout + report.stderr
    assert SECRET not in shown and "reader" not in shown and "http://***@127.0.0.1" in shown
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "llm_cache.sqlite" for p in written)
    for path in [*written, *(p for p in out.rglob("*") if p.is_dir())]:
        assert SECRET not in str(path) and "reader" not in str(path)
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    results = [json.loads(p.read_text(encoding="utf-8")) for p in out.rglob("results.json")]
    assert sorted(r["status"] for r in results) == ["ok"]
    assert all(r["model"].startswith("openai:fake@http://***@127.0.0.1:") for r in results)


def test_a_malformed_spec_with_credentials_is_refused_without_showing_them(tmp_path: Path) -> None:
    env = os.environ | {"PYTHONPATH": str(Path(klue.__file__).parents[1])}
    run = _klue("llm", "--model", f"openai:@http://reader:{SECRET}@host/v1", "--tasks", "nli", "--out",
                str(tmp_path / "out"), env=env)
    assert run.returncode == 2 and "model spec" in run.stderr
    assert SECRET not in run.stdout + run.stderr
