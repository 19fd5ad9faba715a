"""The `files` and `hf` protocols and the Hugging Face copies they read: formats told from the file,
provenance (path, git blob id, sha256, count), the group-keeping splits, labels exchanged by name, and
`export` read back into the very records of the source files."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from klue import protocols, registry
from klue.errors import DataError
from klue.io import hf
from klue.io.hashing import git_blob_sha1, sha256_file
from klue.io.locate import DataRoots, roots_from
from klue.io.provenance import tree_sha256
from klue.io.splits import hash_fraction
from klue.tasks import hf_copy, reading
from klue.tasks.reading import CopyRows

datasets = pytest.importorskip("datasets")

HUB_NLI = ("entailment", "neutral", "contradiction")  # klue/klue's order; the official one differs
KORSTS = ("korean", "korsts")
NLI_DEV = "klue-nli-v1.1/klue-nli-v1.1_dev.json"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path


def official_records(task_name: str, path: Path, fmt: str = "official") -> list[Any]:
    task = registry.get(task_name)
    return reading.read(task, path, fmt, purpose="train").records


def hub_records(task_name: str, dataset: Any) -> list[Any]:
    """The records of rows already loaded, as the `hf` protocol reads a split of the hub's copy."""
    return reading.read(registry.get(task_name), CopyRows(dataset, "hub"), purpose="train").records


def nli_copy(records: list[Any], names: tuple[str, ...], columns: set[str] | None = None) -> Any:
    """An NLI `datasets` copy whose label columns use `names` (restricted to `columns` when given)."""
    spec = {k: hf.Labels(names) if isinstance(v, hf.Labels) else v for k, v in registry.get("nli").hf_layout()
            .features.items() if columns is None or k in columns}
    rows = [{k: v for k, v in row.items() if k in spec} for row in registry.get("nli").hf_layout().to_rows(records)]
    return hf.dataset_from_rows(rows, spec)


# ------------------------------------------------------------------------------------ files


def test_files_on_korsts_tells_the_format_and_records_each_file(shared_data_dir: Path) -> None:
    train = need(shared_data_dir.joinpath(*KORSTS, "sts-train.tsv"))
    dev = need(shared_data_dir.joinpath(*KORSTS, "sts-dev.tsv"))
    task = registry.get("sts")
    data = protocols.resolve_files(task, train, dev)
    assert data.protocol == "files" and not data.official and "not official" in data.description
    assert "korsts format, told from the file" in data.description
    whole_train = official_records("sts", train, "korsts")
    assert len(data.train) + len(data.selection) == len(whole_train) == 5749 and len(data.eval) == 1500
    assert data.eval == official_records("sts", dev, "korsts")
    assert [s.path for s in data.sources] == [str(train), str(train), str(dev)]
    assert [s.n_examples for s in data.sources] == [len(data.train), len(data.selection), len(data.eval)]
    assert [s.git_blob for s in data.sources] == [git_blob_sha1(train)] * 2 + [git_blob_sha1(dev)]
    assert [s.sha256 for s in data.sources] == [sha256_file(train)] * 2 + [sha256_file(dev)]
    assert not any("sha256" in s.used_as for s in data.sources)  # a field of its own, not words
    # the selection slice is the one `heldout` keeps out: the guids hashing below 10%
    assert all(hash_fraction(r.guid) < protocols.HELDOUT_FRACTION for r in data.selection)
    assert 0.05 < len(data.selection) / len(whole_train) < 0.15


def test_one_file_split_three_ways_never_splits_a_group(klue_data_dir: Path) -> None:
    dev = need(klue_data_dir / NLI_DEV)
    task = registry.get("nli")
    data = protocols.resolve_files(task, dev, eval_fraction=0.2)
    parts = [data.train, data.selection, data.eval]
    premises = [{r.premise for r in part} for part in parts]
    assert not (premises[0] & premises[1] or premises[0] & premises[2] or premises[1] & premises[2])
    assert sorted(r.guid for part in parts for r in part) == sorted(r.guid for r in official_records("nli", dev))
    assert all(len(part) % 3 == 0 for part in parts)  # each premise's three pairs on one side
    assert protocols.resolve_files(task, dev, eval_fraction=0.2) == data  # stable on every run
    assert "no group straddles the split" in data.description and "1,000 groups" in data.description
    assert [s.used_as for s in data.sources] == [
        "train (minus a 10% selection slice and a 20% eval part by group hash)",
        "selection (10% of train by group hash)", "eval (20% of train by group hash)"]


def test_the_eval_part_is_the_one_dev_80_20_evaluates_on(klue_data_dir: Path, tmp_path: Path) -> None:
    """With a selection file, `--eval-fraction 0.2` on the dev file splits it as `local:dev-80-20` does."""
    dev = need(klue_data_dir / NLI_DEV)
    task = registry.get("nli")
    local = protocols.resolve(task, "local:dev-80-20", DataRoots(klue_data_dir))
    data = protocols.resolve_files(task, dev, selection=dev, eval_fraction=0.2)
    assert data.eval == local.eval and data.train == local.train and len(data.selection) == 3000
    # Every local file a protocol reads is recorded with its sha256 beside its git blob id.
    assert [(s.git_blob, s.sha256) for s in local.sources] == [(git_blob_sha1(dev), sha256_file(dev))] * 2


def test_option_errors_are_one_clear_sentence(klue_data_dir: Path, tmp_path: Path) -> None:
    dev = need(klue_data_dir / NLI_DEV)
    task = registry.get("nli")
    cases = [({}, "needs --eval FILE, or --eval-fraction"),
             ({"eval": dev, "eval_fraction": 0.2}, "give --eval or --eval-fraction, not both"),
             ({"eval_fraction": 0.95}, "--eval-fraction must be above 0 and below 0.9"),
             ({"eval": dev, "train_format": "kornli"}, "expected the header 'sentence1 sentence2 gold_label'"),
             ({"eval": dev, "eval_format": "csv"},
              "unknown --eval-format 'csv' for nli; formats: official, kornli, datasets, parquet"),
             ({"eval": tmp_path / "absent.json"}, "no such file")]
    for options, message in cases:
        with pytest.raises(DataError, match=message.replace("(", r"\(").replace(".", r"\.")):
            protocols.resolve_files(task, dev, **options)
    with pytest.raises(DataError, match="reads the files you name"):
        protocols.resolve(task, "files", DataRoots(klue_data_dir))


def test_a_format_told_from_the_name_that_does_not_read_says_how_to_name_it(tmp_path: Path) -> None:
    korsts = tmp_path / "korsts" / "train.tsv"
    korsts.parent.mkdir()
    korsts.write_text('[{"guid": "x"}]', encoding="utf-8")
    with pytest.raises(DataError) as caught:
        protocols.resolve_files(registry.get("sts"), korsts, eval_fraction=0.2)
    first, *rest = caught.value.problems
    assert "read as the 'korsts' format, told from the file; name another with --train-format" in first.message
    assert rest and rest[0].path == str(korsts) and rest[0].location == "line 1"


# ------------------------------------------------------------------------------------ copies


def test_an_nli_copy_in_the_hub_label_order_reads_as_the_official_file(klue_data_dir: Path, tmp_path: Path) -> None:
    dev = need(klue_data_dir / NLI_DEV)
    records = official_records("nli", dev)
    copy = nli_copy(records, HUB_NLI)
    assert copy.features["label"].names == list(HUB_NLI)
    assert copy.to_list()[0]["label"] == HUB_NLI.index(records[0].gold_label)  # stored by the hub's index
    copy.save_to_disk(str(tmp_path / "nli"))
    back = protocols.read_named(registry.get("nli"), tmp_path / "nli")
    assert back.format == "datasets" and back.inferred and back.records == records
    # A directory is identified by the sha256 over its files, in both fields.
    assert back.identity.git_blob == back.identity.sha256 == tree_sha256(tmp_path / "nli")
    source = protocols.resolve_files(registry.get("nli"), tmp_path / "nli", eval_fraction=0.2).sources[0]
    assert source.git_blob == source.sha256 == tree_sha256(tmp_path / "nli")
    # The hub's own columns: the same pairs and gold labels, without the annotators' labels.
    hub_columns = {"guid", "source", "premise", "hypothesis", "label"}
    hub_rows = hub_records("nli", nli_copy(records, HUB_NLI, hub_columns))
    assert hub_rows == [dataclasses.replace(r, author=None, validator_labels=None) for r in records]
    # A parquet file with the klue/klue columns reads the same way.
    parquet = tmp_path / "nli.parquet"
    nli_copy(records, HUB_NLI, hub_columns).to_parquet(str(parquet))
    data = protocols.resolve_files(registry.get("nli"), parquet, eval_fraction=0.2)
    assert sorted(r.guid for r in data.train + data.selection + data.eval) == sorted(r.guid for r in records)
    assert data.sources[0].git_blob == git_blob_sha1(parquet) and "parquet format" in data.description
    assert data.sources[0].sha256 == sha256_file(parquet)


HUB_NER = ("B-DT", "I-DT", "B-LC", "I-LC", "B-OG", "I-OG", "B-PS", "I-PS", "B-QT", "I-QT", "B-TI", "I-TI", "O")


def test_hub_rows_without_guids_are_named_by_split_and_row(klue_data_dir: Path) -> None:
    """The hub's NER and DP rows carry no guid: they are named `<prefix>_<split>_<row>`; NER tags in the
    hub's order and DP labels as plain strings map by name."""
    ner_records = official_records("ner", need(klue_data_dir / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv"))[:50]
    rows = [{k: v for k, v in row.items() if k != "guid"}
            for row in registry.get("ner").hf_layout().to_rows(ner_records)]
    hub = hf.with_split(hf.dataset_from_rows(rows, {"sentence": "string", "tokens": ["string"],
                                                    "ner_tags": [hf.Labels(HUB_NER)]}), "validation")
    back = hub_records("ner", hub)
    assert [r.guid for r in back[:2]] == ["klue-ner-v1_validation_00000", "klue-ner-v1_validation_00001"]
    assert [dataclasses.replace(r, guid="") for r in back] == [dataclasses.replace(r, guid="") for r in ner_records]
    dp_records = official_records("dp", need(klue_data_dir / "klue-dp-v1.1/klue-dp-v1.1_dev.tsv"))[:50]
    dp_task = registry.get("dp")
    rows = [{k: v for k, v in row.items() if k != "guid"} for row in reading.layout_of(dp_task).to_rows(dp_records)]
    rows[1]["head"] = [99] * len(rows[1]["head"])
    spec = {"sentence": "string", "index": ["int32"], "word_form": ["string"], "lemma": ["string"], "pos": ["string"],
            "head": ["int32"], "deprel": ["string"]}
    with pytest.raises(DataError) as caught:
        hub_records("dp", hf.dataset_from_rows(rows, spec))
    assert [(p.location, p.message.split(":")[0]) for p in caught.value.problems if p.severity == "error"] == [
        ("$[1].head", "word 1")]
    del rows[1]
    back = hub_records("dp", hf.dataset_from_rows(rows, spec))
    assert back[0].guid == "klue-dp-v1_rows_00000"
    assert [dataclasses.replace(r, guid="") for r in back] == [
        dataclasses.replace(r, guid="") for r in dp_records[:1] + dp_records[2:]]


def _official_layout(tmp_path: Path, files: dict[str, Path]) -> DataRoots:
    """A data root in the official layout holding `files` (official path -> a real file)."""
    root = tmp_path / "klue"
    for official, source in files.items():
        (root / official).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, root / official)
    return DataRoots(root)


def _roots_for(task_name: str, klue_data_dir: Path, shared: Path, tmp_path: Path) -> tuple[DataRoots, Path]:
    """Roots holding a real file of the task in the official layout, and that file."""
    task = registry.get(task_name)
    dev = task.file("dev")
    assert dev is not None
    if (klue_data_dir / dev.path).is_file():
        return roots_from(klue_data_dir, None), klue_data_dir / dev.path
    stand_ins = {"ynat": shared / "klue-partial/ynat-v1.1/ynat-v1_dev_sample_10.json",
                 "wos": shared / "klue-partial/wos-v1.1/wos-v1.1_dev_sample_10.json",
                 "re": shared / "klue-derived/re-train-sample/klue-re-v1.1_train.sample3247.json",
                 "mrc": shared / "scoring-cases/mrc/gold.json"}  # official format, synthetic content
    source = need(stand_ins[task_name])
    roots = _official_layout(tmp_path, {dev.path: source})
    return roots, roots.klue / dev.path


@pytest.mark.parametrize("task_name", ["ynat", "sts", "nli", "ner", "re", "dp", "mrc", "wos"])
def test_export_reads_back_into_the_same_records(task_name: str, klue_data_dir: Path, shared_data_dir: Path,
                                                 tmp_path: Path) -> None:
    task = registry.get(task_name)
    roots, source = _roots_for(task_name, klue_data_dir, shared_data_dir, tmp_path)
    out = tmp_path / "export"
    written = hf_copy.export(task, roots, out)
    assert [s.split for s in written.splits] == ["validation"] and written.splits[0].git_blob == git_blob_sha1(source)
    loaded = datasets.load_from_disk(str(out))
    for column in ("label", "ner_tags", "deprel"):  # the task's label column: names in the official order
        if column in loaded["validation"].features:
            assert tuple(hf.label_names(loaded["validation"], column) or ()) == task.labels, column
    original = reading.read(task, source, "official", purpose="train").records
    back = protocols.read_named(task, Path(f"{out}:validation"))
    assert back.records == original and back.format == "datasets"
    if task_name == "wos":  # turns compare by position; their dialogues must come back whole too
        assert [t.dialogue for t in back.records] == [t.dialogue for t in original]


def test_export_refuses_a_task_without_a_layout(tmp_path: Path) -> None:
    plain = dataclasses.replace(registry.get("nli"), hf=None, package="klue.tasks.nowhere", name="plain")
    with pytest.raises(DataError, match="declares no Hugging Face layout .* cannot be exported yet"):
        hf_copy.export(plain, DataRoots(tmp_path), tmp_path / "out")


# ------------------------------------------------------------------------------------ hf


def _hub_mirror(tmp_path: Path, records: list[Any]) -> Path:
    """A local copy of the hub repository's layout: parquet files per config and split, and the README
    that names them (what `load_dataset("klue/klue", "nli")` reads at the pinned revision)."""
    mirror = tmp_path / "klue-hub"
    (mirror / "nli").mkdir(parents=True)
    hub_columns = {"guid", "source", "premise", "hypothesis", "label"}
    half = len(records) // 2
    nli_copy(records[:half], HUB_NLI, hub_columns).to_parquet(str(mirror / "nli/train-00000-of-00001.parquet"))
    nli_copy(records[half:], HUB_NLI, hub_columns).to_parquet(str(mirror / "nli/validation-00000-of-00001.parquet"))
    (mirror / "README.md").write_text("---\nconfigs:\n- config_name: nli\n  data_files:\n  - split: train\n"
                                      "    path: nli/train-*\n  - split: validation\n    path: nli/validation-*\n---\n")
    return mirror


def test_hf_protocol_reads_the_hub_layout_by_name(klue_data_dir: Path, tmp_path: Path) -> None:
    records = [dataclasses.replace(r, author=None, validator_labels=None)
               for r in official_records("nli", need(klue_data_dir / NLI_DEV))]
    mirror = _hub_mirror(tmp_path, records)
    task = registry.get("nli")
    data = protocols.resolve_hf(task, repo=str(mirror), cache_dir=tmp_path / "cache")
    assert data.protocol == "hf" and not data.official and "not official" in data.description
    assert data.eval == records[1500:] and sorted(data.train + data.selection, key=records.index) == records[:1500]
    assert not {r.premise for r in data.train} & {r.premise for r in data.selection}
    assert all(s.git_blob == hf.HF_REVISION and s.sha256 is None for s in data.sources)  # no local file
    assert [s.n_examples for s in data.sources] == [len(data.train), len(data.selection), len(data.eval)]


def test_hf_protocol_keeps_the_readers_warnings_beside_the_results(klue_data_dir: Path, tmp_path: Path) -> None:
    from klue.results import DATA_WARNINGS_FILE
    from klue.scoring import write_data_warnings

    records = [dataclasses.replace(r, author=None, validator_labels=None)
               for r in official_records("nli", need(klue_data_dir / NLI_DEV))][:40]
    twin = dataclasses.replace(records[0], guid="twin-of-the-first")  # a duplicate pair: a warning, kept
    mirror = _hub_mirror(tmp_path, [*records[:10], twin, *records[10:]])
    data = protocols.resolve_hf(registry.get("nli"), repo=str(mirror), cache_dir=tmp_path / "cache")
    assert [w.severity for w in data.warnings] == ["warning"]
    assert "twin-of-the-first: duplicate (premise, hypothesis) pair" in data.warnings[0].message
    assert "/nli/train" in data.warnings[0].path
    write_data_warnings(tmp_path / "run", data.warnings)  # what every run does with its protocol's warnings
    assert "twin-of-the-first" in (tmp_path / "run" / DATA_WARNINGS_FILE).read_text(encoding="utf-8")


def test_resolve_hf_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    called: list[Any] = []
    monkeypatch.setattr(protocols, "resolve_hf", lambda task, roots=None: called.append((task.name, roots)))
    protocols.resolve(registry.get("nli"), "hf", DataRoots(tmp_path))
    assert called == [("nli", DataRoots(tmp_path))]


def test_hf_protocol_refuses_a_task_without_a_mapping() -> None:
    plain = dataclasses.replace(registry.get("nli"), hf=None, package="klue.tasks.nowhere", name="plain")
    with pytest.raises(DataError, match="has no Hugging Face mapping"):
        protocols.resolve_hf(plain)


def test_a_name_that_tells_nothing_is_read_by_the_reader_that_reads_it(shared_data_dir: Path, tmp_path: Path) -> None:
    from klue.tasks.reading import infer_format

    lines = (need(shared_data_dir / "korean" / "korsts" / "sts-dev.tsv")).read_text(encoding="utf-8").splitlines()
    plain = tmp_path / "mine.tsv"
    plain.write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    assert infer_format(registry.get("sts"), plain) == "korsts"
    broken = tmp_path / "broken.tsv"
    broken.write_text("no\ttabs that read\n", encoding="utf-8")
    assert infer_format(registry.get("sts"), broken) == "korsts"  # the one STS reader of .tsv; its error says so
