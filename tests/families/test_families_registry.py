"""The model-family registry (klue.families): which family a spec is, its GPU use, its options, and what the
benchmark gives each family's cells."""

from __future__ import annotations

from pathlib import Path

import pytest

from klue import families
from klue.benchmark.cells import CellSpec
from klue.benchmark.runner import BenchmarkPlan
from klue.errors import DataError
from klue.families.encoder import EncoderOptions
from klue.results import CLASSIC, EMBEDDING, ENCODER, LLM, Results


@pytest.mark.parametrize(("spec", "name", "gpu"), [
    ("classic", CLASSIC, False),
    ("hf:org/causal-lm", LLM, True),
    ("openai:qwen@http://127.0.0.1:8000/v1", LLM, False),
    ("emb:/models/multilingual-e5-small", EMBEDDING, True),
    ("emb:openai:e5@http://127.0.0.1:8000/v1", EMBEDDING, False),
    ("klue/roberta-base", ENCODER, True),
    ("./runs/nli/best", ENCODER, True),
    ("classical", ENCODER, True),  # only `classic` itself is the baselines
])
def test_each_spec_has_one_family(spec: str, name: str, gpu: bool) -> None:
    family = families.family_of(spec)
    assert family.name == name and families.uses_gpu(spec) is gpu
    assert [f.name for f in families.FAMILIES if f.recognises(spec)] == ([] if name == ENCODER else [name])


def test_every_family_checks_its_specs_before_the_runner_runs_a_cell(tmp_path: Path) -> None:
    """`check_specs` asks each model's family (`ModelFamily.check`); the runner asks it before anything."""
    from klue.benchmark.runner import run_benchmark

    model = tmp_path / "e5"
    for spec in ("emb:/nonexistent", f"emb:{model}", "hf:/nonexistent", "emb:openai:no-url"):
        with pytest.raises(DataError):
            families.check_specs(["classic", spec])
    model.mkdir()
    (model / "config.json").write_text("{}")
    families.check_specs(["classic", "klue/roberta-base", f"emb:{model}", "emb:openai:e5@http://127.0.0.1:9/v1"])
    ran: list[CellSpec] = []

    def cell(spec: CellSpec) -> Results:
        ran.append(spec)
        raise AssertionError("no cell runs")

    with pytest.raises(DataError, match="no such directory"):
        run_benchmark(BenchmarkPlan(("sts",), ("classic", "emb:/nonexistent"), (1,), tmp_path / "bench"), cell)
    assert not ran and not (tmp_path / "bench").exists()


def test_the_encoder_is_the_fallback_and_asked_last() -> None:
    assert families.FALLBACK.name == ENCODER
    assert ENCODER not in {f.name for f in families.FAMILIES}
    assert {f.command for f in (*families.FAMILIES, families.FALLBACK)} == {"train", "llm", "embed"}


def test_options_are_each_familys_dataclass() -> None:
    assert families.family_of("klue/roberta-base").options({"epochs": 2}) == EncoderOptions({"epochs": 2})
    with pytest.raises(DataError, match="take no hyper-parameter overrides"):
        families.family_of(CLASSIC).options({"epochs": 2})
    llm = families.family_of("hf:x")
    options = llm.options({"shots": 2, "concurrency": 8, "method": "generate"})
    assert (options.settings.shots, options.settings.method, options.backend.concurrency) == (2, "generate", 8)
    assert options.backend.timeout_s == 120.0 and options.settings.limit is None  # the defaults
    with pytest.raises(DataError, match="not epochs"):
        llm.options({"epochs": 2})


def test_a_malformed_llm_spec_is_refused_by_its_family() -> None:
    with pytest.raises(DataError, match="openai:MODEL@"):
        families.family_of("openai:no-url").check("openai:no-url")


def test_benchmark_overrides_go_to_families_that_take_options(tmp_path: Path) -> None:
    plan = BenchmarkPlan(("nli",), ("classic", "klue/roberta-base"), (1,), tmp_path, overrides=(("epochs", 1),))
    overrides = {cell.model: cell.overrides for cell in plan.cells()}
    assert overrides == {"classic": (), "klue/roberta-base": (("epochs", 1),)}


def test_local_workers_take_gpus_only_for_gpu_families() -> None:
    from klue.benchmark.executors import worker_count

    server = "openai:qwen@http://127.0.0.1:8000/v1"
    assert worker_count(4, [server], ["0", "1"]) == 4  # HTTP cells use no GPU here: not one worker per GPU
    assert worker_count(4, [server, "hf:org/lm"], ["0", "1"]) == 2


def test_a_new_family_is_one_module_and_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """tests/families/toy_family.py is a whole family; one line in FAMILIES makes `toy:NAME` a spec the
    registry places, a benchmark plans (not where it does not apply) and a cell runs to the judge's Results."""
    import toy_family

    from klue import registry
    from klue.protocols import ProtocolData
    from klue.scoring import RunRequest
    from klue.tasks.ynat.records import LABELS, YnatRecord

    monkeypatch.setattr(families, "FAMILIES", (*families.FAMILIES, toy_family.FAMILY))
    assert families.family_of("toy:x") is toy_family.FAMILY and not families.uses_gpu("toy:x")
    plan = BenchmarkPlan(("ynat", "sts"), ("toy:x",), (1,), tmp_path)
    assert [cell.task for cell in plan.cells()] == ["ynat"]  # STS has no labels: not applicable, no cell
    records = [YnatRecord(f"g{i}", f"제목 {i}", LABELS[0 if i % 3 else 1]) for i in range(30)]
    data = ProtocolData("local:x", False, "synthetic", records[:20], records[20:], None, ())
    results = families.family_of("toy:x").run_cell(RunRequest(registry.get("ynat"), "toy:x", data, 1, tmp_path), {})
    assert results.status == "ok" and results.model_family == "toy" and results.n_eval == 10
    assert results.scores["accuracy"] == pytest.approx(70.0)  # 7 of the last 10 carry the most frequent label
