"""The paper recipe by task and model size, overrides, and helpful errors."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from klue import registry
from klue.cli._common import parse_key_values
from klue.errors import DataError
from klue.training.recipes import load_recipe, resolve

BASE = SimpleNamespace(hidden_size=768)
LARGE = SimpleNamespace(hidden_size=1024)


def test_paper_recipe_by_model_size() -> None:
    nli_base = resolve("paper", "nli", BASE, {})
    assert nli_base.name == "paper/base"
    hp = nli_base.hyperparameters
    assert (hp.learning_rate, hp.epochs, hp.batch_size, hp.warmup_ratio, hp.max_len) == (5e-5, 5, 32, 0.1, 128)
    assert resolve("paper", "nli", LARGE, {}).hyperparameters.warmup_ratio == 0.2
    sts_large = resolve("paper", "sts", LARGE, {}).hyperparameters
    assert (sts_large.learning_rate, sts_large.epochs) == (2e-5, 4)
    ner_large = resolve("paper", "ner", LARGE, {}).hyperparameters
    assert (ner_large.learning_rate, ner_large.batch_size, ner_large.epochs, ner_large.max_len) == (1e-5, 8, 3, 510)
    ynat = resolve("paper", "ynat", BASE, {}).hyperparameters
    assert (ynat.epochs, ynat.evals_per_epoch, ynat.max_grad_norm, ynat.weight_decay) == (4, 4, 1.0, 0.0)


def test_every_registered_task_has_a_paper_recipe() -> None:
    tasks = load_recipe("paper")["tasks"]
    assert {t.name for t in registry.all_tasks()} <= set(tasks)


def test_overrides_are_typed_and_checked() -> None:
    values = parse_key_values(["learning_rate=1e-3", "epochs=2", "group_by_length=false", "max_steps=null"], "override")
    hp = resolve("paper", "ynat", BASE, values).hyperparameters
    assert (hp.learning_rate, hp.epochs, hp.group_by_length, hp.max_steps) == (1e-3, 2.0, False, None)
    assert resolve("paper", "ynat", BASE, {"size": "large"}).name == "paper/large"
    with pytest.raises(DataError, match="did you mean 'learning_rate'"):
        resolve("paper", "ynat", BASE, {"learnig_rate": 1})
    with pytest.raises(DataError, match="not a valid int"):
        resolve("paper", "ynat", BASE, {"batch_size": "many"})
    with pytest.raises(DataError, match="warmup_ratio"):
        resolve("paper", "ynat", BASE, {"warmup_ratio": 1.5})
    with pytest.raises(DataError, match="key=value"):
        parse_key_values(["epochs"], "override")
    with pytest.raises(DataError, match="unknown recipe"):
        load_recipe("nonexistent")


def test_head_options_are_collected_for_the_adapter() -> None:
    values = parse_key_values(["head.pooling=cls", "head.markers=typed", "epochs=1"], "override")
    hp = resolve("paper", "re", BASE, values).hyperparameters
    assert hp.head_options == {"pooling": "cls", "markers": "typed"}
    assert hp.epochs == 1.0
    assert resolve("paper", "re", BASE, {}).hyperparameters.head_options == {}
    with pytest.raises(DataError, match="unknown hyper-parameter 'head.'"):
        resolve("paper", "re", BASE, {"head.": "x"})
