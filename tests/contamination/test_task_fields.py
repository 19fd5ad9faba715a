"""Every registered task declares which fields of an example are input and which are answer, and its real
examples give texts in that shape (read where the files are here, skipped otherwise)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.contamination.examples import examples_of
from klue.tasks.base import Task, TextFields
from klue.tasks.reading import read

TASKS = registry.all_tasks()

# A real file of each task, official format where the official file is here, another of its readers
# otherwise (under the klue root, or the extra data root): (root, path, reader)
REAL_FILES: dict[str, tuple[str, str, str]] = {
    "ynat": ("extra", "klue-partial/ynat-v1.1/ynat-v1_dev_sample_10.json", "official"),
    "sts": ("klue", "klue-sts-v1.1/klue-sts-v1.1_dev.json", "official"),
    "nli": ("klue", "klue-nli-v1.1/klue-nli-v1.1_dev.json", "official"),
    "ner": ("klue", "klue-ner-v1.1/klue-ner-v1.1_dev.tsv", "official"),
    "re": ("extra", "klue-derived/re-train-sample/klue-re-v1.1_train.sample3247.json", "official"),
    "dp": ("klue", "klue-dp-v1.1/klue-dp-v1.1_dev.tsv", "official"),
    "mrc": ("extra", "korean/korquad-v1/KorQuAD_v1.0_dev.json", "korquad"),
    "wos": ("extra", "klue-partial/wos-v1.1/wos-v1.1_dev_sample_10.json", "official"),
}


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_every_task_declares_its_input_and_answer(task: Task[Any, Any]) -> None:
    fields = task.text_fields
    assert isinstance(fields, TextFields), f"{task.name} declares no text_fields"
    assert fields.input and fields.answer and not set(fields.input) & set(fields.answer)
    assert callable(fields.text)
    record_fields = {f.name for f in dataclasses.fields(task.record_type)}
    properties = {name for name in dir(task.record_type) if isinstance(getattr(task.record_type, name), property)}
    # names are the record's own (or the file's own word for a derived text: NER's "sentence", "entities")
    assert set(fields.input) & (record_fields | properties | {"sentence", "turns"}), fields.input


def test_the_registry_is_covered() -> None:
    assert set(REAL_FILES) == {t.name for t in TASKS}


@pytest.mark.realdata
@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_real_examples_give_their_texts(task: Task[Any, Any], klue_data_dir: Path, shared_data_dir: Path) -> None:
    root, relative, reader = REAL_FILES[task.name]
    path = (klue_data_dir if root == "klue" else shared_data_dir) / relative
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    records = read(task, path, reader, purpose="score").records[:300]
    examples = examples_of(task, records)
    assert examples and all(e.task == task.name and e.guid for e in examples)
    assert all(any(part.strip() for part in e.input) for e in examples), "an example without input text"
    assert task.text_fields is not None
    if task.name != "wos":  # a dialogue turn has as many parts as utterances so far
        assert all(len(e.input) == len(task.text_fields.input) for e in examples)
    answered = [e for e in examples if any(a.strip() for a in e.answer)]
    assert len(answered) >= 0.5 * len(examples), "most examples carry their answer's text"
