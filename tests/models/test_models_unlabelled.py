"""Records read for prediction without their gold featurize for inference in every adapter (their features
carry no label), so `klue predict` works on new data for every task."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.models.features import FeaturizeContext
from klue.models.heads import IGNORE_INDEX


def _blank(task_name: str, record: Any) -> Any:
    """The record as the prediction reader gives it without gold (the placeholders documented per task)."""
    blanks = {"ynat": {"label": ""}, "nli": {"gold_label": "", "author": None, "validator_labels": None},
              "sts": {}, "re": {"label": ""}, "ner": {"tags": ()}}
    fields = {f.name for f in dataclasses.fields(record)}
    changes = {k: v for k, v in blanks[task_name].items() if k in fields}
    return dataclasses.replace(record, labelled=False, **changes)


@pytest.mark.parametrize("task_name", ["ynat", "nli", "re", "ner"])
def test_unlabelled_records_featurize_without_labels(task_name: str, tmp_path: Path,
                                                     protocol_slice: Any) -> None:
    from klue.models.loading import load_encoder
    from klue.models.tiny import make_tiny_model_dir

    task = registry.get(task_name)
    records = list(protocol_slice(task_name, 4, 4).eval)
    adapter = task.make_adapter()
    texts = [" ".join(str(v) for v in dataclasses.asdict(r).values() if isinstance(v, str)) for r in records]
    model = make_tiny_model_dir(tmp_path / "m", "bert", texts, vocab_size=300, max_len=64)
    loaded = load_encoder(str(model))
    adapter.prepare(loaded.tokenizer, records)
    ctx = FeaturizeContext(loaded.tokenizer, 64, True, 16)
    labelled = adapter.featurize(records, ctx)
    blank = adapter.featurize([_blank(task_name, r) for r in records], ctx)
    assert [f.input_ids for f in blank] == [f.input_ids for f in labelled]
    for feature in blank:
        labels = feature.label if isinstance(feature.label, tuple) else (feature.label,)
        assert set(labels) == {IGNORE_INDEX}
