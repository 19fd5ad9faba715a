"""The task-free Hugging Face plumbing: feature specs, label names, telling a format from a path, loading
and writing `datasets` copies, the one-sentence errors, and the identity of a directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from klue.errors import DataError, ProblemLog
from klue.io import formats, hf
from klue.io.hashing import git_blob_sha1, sha256_file
from klue.io.provenance import data_source, file_identity, identify, tree_sha256

datasets = pytest.importorskip("datasets")

SPEC = {"guid": "string", "label": hf.Labels(("b", "a")), "tags": [hf.Labels(("O", "X"))],
        "inner": {"score": "float64", "flag": hf.Labels(("no", "yes"))}, "items": [{"n": "int32"}]}
ROWS = [{"guid": "g0", "label": "a", "tags": ["X", "O"], "inner": {"score": 1.5, "flag": "yes"}, "items": [{"n": 1}]},
        {"guid": "g1", "label": "b", "tags": [], "inner": None, "items": []}]


def test_feature_spec_becomes_features_with_names_in_the_given_order() -> None:
    dataset = hf.dataset_from_rows(ROWS, SPEC, "a description")
    assert dataset.features["label"].names == ["b", "a"]
    assert dataset.to_list()[0]["label"] == 1 and dataset.info.description == "a description"
    assert hf.label_names(dataset, "label") == ["b", "a"]
    assert hf.label_names(dataset, "tags") == ["O", "X"]  # the ClassLabel inside a list column
    assert hf.label_names(dataset, "inner.flag") == ["no", "yes"]  # a struct's field
    assert hf.label_names(dataset, "guid") is None and hf.label_names(dataset, "nope") is None
    assert dataset.to_list()[1]["inner"] is None  # a null struct stays null
    with pytest.raises(ValueError, match="unknown value type"):
        hf.features({"x": "text"})


def test_by_name_maps_indices_through_names_and_refuses_bare_indices() -> None:
    log = ProblemLog("copy")
    assert hf.by_name(1, ["b", "a"], ("a", "b"), "$[0].label", log) == "a"
    assert hf.by_name("b", None, ("a", "b"), "$[1].label", log) == "b"
    assert hf.by_name(0, None, ("a", "b"), "$[2].label", log) is None
    assert hf.by_name(-1, ["b", "a"], ("a", "b"), "$[3].label", log) is None
    assert hf.by_name("c", None, ("a", "b"), "$[4].label", log) is None
    assert [p.location for p in log.errors] == ["$[2].label", "$[3].label", "$[4].label"]
    assert "carries no label names" in log.errors[0].message and "-1" in log.errors[1].message


def test_formats_are_told_from_the_path(tmp_path: Path) -> None:
    saved = tmp_path / "copy"
    saved.mkdir()
    keys = ["korsts", "ynat-resplit", "conllu"]
    assert formats.format_named_by(saved, keys) == formats.DATASETS_FORMAT
    assert formats.format_named_by(Path(f"{saved}:validation"), keys) == formats.DATASETS_FORMAT
    assert formats.saved_path(Path(f"{saved}:validation")) == formats.SavedPath(saved, "validation")
    assert formats.saved_path(tmp_path / "absent:train") is None
    assert formats.format_named_by(tmp_path / "rows.parquet", keys) == formats.PARQUET_FORMAT
    assert formats.format_named_by(Path("korean/korsts/sts-train.tsv"), keys) == "korsts"
    assert formats.format_named_by(Path("x/ynat-resplit_train.json"), keys) == "ynat-resplit"
    assert formats.format_named_by(Path("ko_gsd-ud-dev.conllu"), keys) == "conllu"
    assert formats.format_named_by(Path("klue-sts-v1.1_dev.json"), keys) == formats.OFFICIAL_FORMAT


def _saved_dict(tmp_path: Path) -> Path:
    out = tmp_path / "dict"
    data = hf.dataset_from_rows(ROWS, SPEC)
    hf.write_dataset_dict(out, {"train": data, "validation": data})
    return out


def test_load_saved_needs_a_split_for_a_dataset_dict(tmp_path: Path) -> None:
    out = _saved_dict(tmp_path)
    assert sorted(os.listdir(out)) == ["dataset_dict.json", "train", "validation"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind
    loaded = hf.load_saved(formats.SavedPath(out, "validation"))
    assert loaded.to_list() == hf.dataset_from_rows(ROWS, SPEC).to_list() and str(loaded.split) == "validation"
    with pytest.raises(DataError, match=r"splits train, validation: name one, e\.g\. .*dict:train"):
        hf.load_saved(formats.SavedPath(out, None))
    with pytest.raises(DataError, match="no split 'test' here; the splits are train, validation"):
        hf.load_saved(formats.SavedPath(out, "test"))
    single = hf.load_saved(formats.SavedPath(out / "train", None))  # a split's own directory is a Dataset
    assert len(single) == 2
    with pytest.raises(DataError, match="a single Dataset, not a DatasetDict"):
        hf.load_saved(formats.SavedPath(out / "train", "train"))
    with pytest.raises(DataError, match="not a `datasets` save_to_disk directory"):
        hf.load_saved(formats.SavedPath(tmp_path, None))


def test_write_dataset_dict_replaces_an_export_but_never_other_files(tmp_path: Path) -> None:
    out = _saved_dict(tmp_path)
    smaller = hf.dataset_from_rows(ROWS[:1], SPEC)
    hf.write_dataset_dict(out, {"train": smaller})
    assert sorted(os.listdir(out)) == ["dataset_dict.json", "train"]
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(DataError, match="not a `datasets` directory; choose a new --out"):
        hf.write_dataset_dict(other, {"train": smaller})
    assert (other / "notes.txt").read_text() == "keep me"


def test_parquet_keeps_label_names_and_bad_files_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    hf.dataset_from_rows(ROWS, SPEC).to_parquet(str(path))
    loaded = hf.load_parquet(path)
    assert hf.label_names(loaded, "label") == ["b", "a"] and loaded.to_list()[0]["label"] == 1
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(DataError, match="cannot read this parquet file") as caught:
        hf.load_parquet(bad)
    assert "\n" not in caught.value.summary()
    with pytest.raises(DataError, match="no such file"):
        hf.load_parquet(tmp_path / "absent.parquet")


def test_without_datasets_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` now raises ImportError
    with pytest.raises(DataError) as caught:
        hf.require_datasets()
    assert caught.value.summary() == ("reading or writing Hugging Face copies needs the optional `datasets` "
                                      "package: pip install 'klue[hf]'")


def test_hub_unreachable_without_cache_is_one_sentence(tmp_path: Path) -> None:
    """Offline and nothing cached: one sentence naming the copy and the way out, no traceback (a fresh
    process, since `datasets` reads HF_DATASETS_OFFLINE when it is imported)."""
    code = ("from klue.io import hf\nfrom klue.errors import DataError\n"
            "try:\n    hf.load_hub('nli')\nexcept DataError as e:\n    print(e.summary())\n")
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr
    message = out.stdout.strip()
    assert "\n" not in message and "Traceback" not in out.stderr
    assert message.startswith(f"cannot load klue/klue (nli, revision {hf.HF_REVISION[:12]}): the Hugging Face hub "
                              "cannot be reached and no cached copy of this revision was found")


def test_hub_revision_is_pinned_once() -> None:
    assert len(hf.HF_REVISION) == 40 and int(hf.HF_REVISION, 16) >= 0
    assert hf.HF_DATASET == "klue/klue"


def test_a_directory_is_identified_by_its_files(tmp_path: Path) -> None:
    out = _saved_dict(tmp_path)
    first = tree_sha256(out)
    assert first == tree_sha256(out) and identify(out).git_blob == identify(out).sha256 == first
    hf.write_dataset_dict(out, {"train": hf.dataset_from_rows(ROWS[:1], SPEC)})
    assert tree_sha256(out) != first
    single = out / "dataset_dict.json"
    assert identify(single).git_blob == git_blob_sha1(single) and identify(single).sha256 == sha256_file(single)


def test_a_file_is_identified_in_one_pass_and_recorded_with_both_ids(tmp_path: Path) -> None:
    """`file_identity` reads a file once for its git blob id and its sha256 (empty and multi-chunk files
    too); `data_source` records both."""
    for name, data in [("empty", b""), ("small", "한국어 줄\n".encode()), ("large", os.urandom(3 * (1 << 20) + 5))]:
        path = tmp_path / name
        path.write_bytes(data)
        identity = file_identity(path)
        assert (identity.git_blob, identity.sha256) == (git_blob_sha1(path), sha256_file(path)), name
    source = data_source(tmp_path / "small", 1, "eval", tmp_path)
    assert (source.path, source.git_blob, source.sha256) == ("small", git_blob_sha1(tmp_path / "small"),
                                                            sha256_file(tmp_path / "small"))
