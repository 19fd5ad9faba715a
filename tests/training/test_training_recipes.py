"""The paper recipe by task and model size, overrides, and helpful errors."""

from __future__ import annotations

import warnings
from pathlib import Path
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


def test_checkpoint_budgets_are_checked_and_do_not_change_the_run() -> None:
    hp = resolve("paper", "ynat", BASE, {"checkpoint_minutes": "2.5", "checkpoint_steps": "100"}).hyperparameters
    assert (hp.checkpoint_minutes, hp.checkpoint_steps) == (2.5, 100)
    assert resolve("paper", "ynat", BASE, {"checkpoint_minutes": None}).hyperparameters.checkpoint_minutes is None
    with pytest.raises(DataError, match="checkpoint_minutes must be > 0"):
        resolve("paper", "ynat", BASE, {"checkpoint_minutes": 0})
    with pytest.raises(DataError, match="checkpoint_steps must be >= 1"):
        resolve("paper", "ynat", BASE, {"checkpoint_steps": 0})


def test_checkpoint_policy_writes_at_epoch_ends_and_on_budgets() -> None:
    from klue.training.engine import checkpoint_policy

    hp = resolve("paper", "ynat", BASE, {"checkpoint_steps": 7}).hyperparameters
    policy = checkpoint_policy(hp, steps_per_epoch=10, total_steps=40)
    assert policy is not None
    assert (policy.every_seconds, policy.every_steps, policy.at_end) == (600.0, 7, "finished")
    assert policy.at_steps == {10, 20, 30}  # not 40: after the last step, a "finished" record only
    kept = resolve("paper", "ynat", BASE, {"keep_checkpoints": True}).hyperparameters
    assert checkpoint_policy(kept, 10, 40).at_end == "state"  # type: ignore[union-attr]
    assert checkpoint_policy(resolve("paper", "ynat", BASE, {"save_checkpoints": False}).hyperparameters,
                             10, 40) is None


@pytest.mark.parametrize(("flags", "found"), [
    ("fpu sse2 avx2 fma", []),  # the AVX2-only AMD EPYC these figures come from
    ("fpu avx2 avx512f avx512_bf16", ["avx512_bf16"]),
    ("fpu avx512f avx512_bf16 amx_bf16 amx_tile", ["amx_bf16", "avx512_bf16"]),
])
def test_auto_mixed_precision_on_cpu_follows_its_bf16_units(tmp_path: Path, flags: str, found: list[str]) -> None:
    from klue.training.engine import cpu_bf16_flags, mixed_precision_for

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: a CPU\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
    assert cpu_bf16_flags(cpuinfo) == found
    assert mixed_precision_for("auto", cpu=True, cpuinfo=cpuinfo) == ("bf16" if found else "no")
    assert mixed_precision_for("no", cpu=True, cpuinfo=cpuinfo) == "no"
    if found:
        assert mixed_precision_for("bf16", cpu=True, cpuinfo=cpuinfo) == "bf16"
    else:
        with pytest.warns(UserWarning, match="without bf16 units"):
            assert mixed_precision_for("bf16", cpu=True, cpuinfo=cpuinfo) == "bf16"
    assert cpu_bf16_flags(tmp_path / "absent") == []  # not Linux: no bf16 assumed


def test_each_run_in_one_process_gets_the_precision_it_asks_for() -> None:
    # accelerate keeps one process-wide state and refuses a second precision unless it is reset first.
    from klue.training.engine import make_accelerator

    bf16 = resolve("paper", "ynat", BASE, {"mixed_precision": "bf16", "cpu": True}).hyperparameters
    fp32 = resolve("paper", "ynat", BASE, {"mixed_precision": "no", "cpu": True}).hyperparameters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bf16 on a CPU without bf16 units warns; not what this test checks
        assert make_accelerator(bf16).mixed_precision == "bf16"
        assert make_accelerator(fp32).mixed_precision == "no"
        assert make_accelerator(bf16).mixed_precision == "bf16"
