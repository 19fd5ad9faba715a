"""NLI accuracy: gold scores 100 on the real dev set; scoring cases vs sklearn."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from klue.metrics import nli

LABELS = ["entailment", "contradiction", "neutral"]


def _dev_gold(klue_data_dir: Path) -> list[str]:
    records = json.loads((klue_data_dir / "klue-nli-v1.1/klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    return [r["gold_label"] for r in records]


def test_gold_scores_the_maximum_on_real_dev(klue_data_dir: Path) -> None:
    gold = _dev_gold(klue_data_dir)
    report = nli.compute(gold, gold, LABELS)
    assert report.scores == {"accuracy": 100.0, "macro_f1": 100.0}
    assert report.n_examples == 3000
    assert report.confusion is not None
    assert [report.confusion.counts[i][i] for i in range(3)] == [1000, 1000, 1000]


@pytest.mark.parametrize("case", [1, 2, 3])
def test_scoring_cases_match_sklearn(klue_data_dir: Path, shared_data_dir: Path, case: int) -> None:
    from sklearn.metrics import accuracy_score, f1_score

    gold = _dev_gold(klue_data_dir)
    with gzip.open(shared_data_dir / f"scoring-cases/nli/pred_{case}.json.gz", "rt", encoding="utf-8") as f:
        pred = json.load(f)
    report = nli.compute(gold, pred, LABELS)
    assert report.scores["accuracy"] == pytest.approx(100 * accuracy_score(gold, pred), abs=1e-9)
    assert report.scores["macro_f1"] == pytest.approx(100 * f1_score(gold, pred, average="macro"), abs=1e-9)
    assert nli.accuracy(gold, pred) == report.scores["accuracy"]
