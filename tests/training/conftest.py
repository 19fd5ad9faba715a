"""Fixtures for the training tests: 64 real examples per task and tiny models trained on their text."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.errors import ProblemLog

N_EXAMPLES = 64


def _read(task: Any, path: Path, reader: Callable[[Path, ProblemLog], list[Any]] | None = None) -> list[Any]:
    log = ProblemLog(str(path))
    records = (reader or task.read)(path, log)
    log.raise_if_errors()
    return records


def record_texts(record: Any) -> list[str]:
    names = ("title", "premise", "hypothesis", "sentence1", "sentence2", "text", "sentence")
    return [getattr(record, name) for name in names if isinstance(getattr(record, name, None), str)]


@pytest.fixture(scope="session")
def examples(klue_data_dir: Path, shared_data_dir: Path) -> Callable[[str], list[Any]]:
    """`examples(task_name)`: 64 real records. NLI, STS, NER: the first of the official dev files;
    YNAT (no official dev here): the first titles of each class of the ynat-resplit train file; RE: the
    first of the real train sample (klue-derived/re-train-sample); DP: the first of the official dev file."""
    cache: dict[str, list[Any]] = {}

    def get(name: str) -> list[Any]:
        if name not in cache:
            task = registry.get(name)
            if name == "ynat":
                path = shared_data_dir / "klue-derived" / "ynat-resplit" / "ynat-resplit_train.json"
                records = _read(task, path, task.other_readers["ynat-resplit"])
                by_label: dict[str, list[Any]] = defaultdict(list)
                for record in records:
                    by_label[record.label].append(record)
                per_class = -(-N_EXAMPLES // len(task.labels))
                cache[name] = [r for label in task.labels for r in by_label[label][:per_class]][:N_EXAMPLES]
            elif name == "re":
                path = shared_data_dir / "klue-derived" / "re-train-sample" / "klue-re-v1.1_train.sample3247.json"
                cache[name] = _read(task, path)[:N_EXAMPLES]
            else:
                entry = task.file("dev")
                assert entry is not None
                cache[name] = _read(task, klue_data_dir / entry.path)[:N_EXAMPLES]
        return cache[name]

    return get


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, examples: Callable[[str], list[Any]]
               ) -> Callable[[str, str], Path]:
    """`tiny_model(task_name, arch)`: a from-scratch model directory (no dropout, so runs are comparable
    across process counts) whose tokenizer is trained on that task's 64 examples."""
    from klue.models.tiny import make_tiny_model_dir

    cache: dict[tuple[str, str], Path] = {}

    def get(name: str, arch: str) -> Path:
        if (name, arch) not in cache:
            texts = [t for record in examples(name) for t in record_texts(record)]
            out = tmp_path_factory.mktemp(f"tiny-{name}-{arch}")
            # NER keeps a near character-level vocabulary: its labels are per character, and sub-words
            # spanning an entity boundary cap what the official alignment can reach.
            vocab = 600 if name == "ner" else 2000
            cache[(name, arch)] = make_tiny_model_dir(out, arch=arch, texts=texts,  # type: ignore[arg-type]
                                                      vocab_size=vocab, dropout=0.0, max_len=256)
        return cache[(name, arch)]

    return get
