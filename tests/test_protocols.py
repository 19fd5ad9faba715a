"""Protocols: generic splits, task-specific file protocols, availability and errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from klue import protocols, registry
from klue.errors import DataError, ProblemLog
from klue.io.formats import ReadPurpose
from klue.io.hashing import git_blob_sha1
from klue.io.locate import DataRoots, FileRef, roots_from
from klue.io.release import OfficialFile
from klue.tasks.base import FileProtocol, Task


@dataclasses.dataclass(frozen=True)
class Item:
    guid: str
    group: str


def read_items(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[Item]:
    return [Item(**obj) for obj in json.loads(path.read_text())]


def fake_task(**changes: Any) -> Task[Item, Any]:
    base = registry.get("ner")
    fields: dict[str, Any] = {
        "name": "fake", "aliases": (), "read": read_items, "guid": lambda r: r.guid,
        "group_key": lambda r: r.group, "protocols": {},
        "files": (OfficialFile("train", "fake/train.json", "0" * 40), OfficialFile("dev", "fake/dev.json", "1" * 40)),
    }
    fields.update(changes)
    return dataclasses.replace(base, **fields)


def write_items(path: Path, n: int, per_group: int = 3, prefix: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    items = [{"guid": f"{prefix}{i}", "group": f"{prefix}g{i // per_group}"} for i in range(n)]
    path.write_text(json.dumps(items))


@pytest.fixture()
def roots(tmp_path: Path) -> DataRoots:
    write_items(tmp_path / "klue" / "fake" / "train.json", 600, prefix="t")
    write_items(tmp_path / "klue" / "fake" / "dev.json", 300, prefix="d")
    return DataRoots(tmp_path / "klue", None)


def groups(items: list[Item]) -> set[str]:
    return {i.group for i in items}


def test_roots_from_precedence(tmp_path: Path) -> None:
    env = {"KLUE_DATA_DIR": "/env/klue", "KLUE_EXTRA_DATA_DIR": "/env/extra"}
    assert roots_from("/cli", "/cli-extra", env) == DataRoots(Path("/cli"), Path("/cli-extra"))
    assert roots_from(None, None, env) == DataRoots(Path("/env/klue"), Path("/env/extra"))
    bare = roots_from(None, None, {})
    assert bare.extra is None and bare.klue.name == "data"  # the per-user cache


def test_dev_80_20_is_deterministic_disjoint_and_grouped(roots: DataRoots) -> None:
    task = fake_task()
    first = protocols.resolve(task, "local:dev-80-20", roots)
    again = protocols.resolve(task, "local:dev-80-20", roots)
    assert first.train == again.train and first.eval == again.eval
    assert not groups(first.train) & groups(first.eval)
    assert sorted(i.guid for i in first.train + first.eval) == sorted(f"d{i}" for i in range(300))
    assert 0.65 < len(first.train) / 300 < 0.95
    assert first.selection is None and not first.official
    assert "not official" in first.description and "100 groups" in first.description
    dev = roots.klue / "fake" / "dev.json"
    assert [s.git_blob for s in first.sources] == [git_blob_sha1(dev)] * 2
    assert [s.n_examples for s in first.sources] == [len(first.train), len(first.eval)]
    assert first.sources[0].path == "fake/dev.json"


def test_heldout_and_official(roots: DataRoots) -> None:
    task = fake_task()
    held = protocols.resolve(task, "heldout", roots)
    assert not held.official and "not the official" in held.description
    assert held.selection is not None and not groups(held.selection) & groups(held.train)
    assert len(held.selection) + len(held.train) == 600 and 0.03 < len(held.selection) / 600 < 0.2
    assert len(held.eval) == 300
    official = protocols.resolve(task, "official", roots)
    assert official.official and official.selection == official.eval and len(official.train) == 600
    assert official.description.startswith("official protocol")
    # the fake declared blobs differ from the files: the description says so
    assert "differs from the official release" in official.description


def test_unknown_and_missing_protocols(roots: DataRoots, tmp_path: Path) -> None:
    task = fake_task()
    with pytest.raises(DataError, match="unknown protocol 'local:nope'.*known: official, heldout"):
        protocols.resolve(task, "local:nope", roots)
    empty = DataRoots(tmp_path / "nothing", None)
    with pytest.raises(DataError, match=r"fake/train.json is missing.*klue data download fake"):
        protocols.resolve(task, "official", empty)
    assert protocols.available(task, empty) == []
    assert protocols.available(task, roots) == ["official", "heldout", "local:dev-80-20"]
    (roots.klue / "fake" / "train.json").unlink()
    assert protocols.available(task, roots) == ["local:dev-80-20"]


def test_file_protocol_with_extra_root(roots: DataRoots, tmp_path: Path) -> None:
    write_items(tmp_path / "extra" / "part" / "train.json", 50, prefix="p")
    custom = FileProtocol(
        name="local:part", train=FileRef("extra", "part/train.json"),
        eval=FileRef("klue", "fake/dev.json"), reader="official",
        description="local protocol, not official: trained on part, evaluated on dev")
    task = fake_task(protocols={"local:part": custom})
    assert "local:part" not in protocols.available(task, roots)
    with pytest.raises(DataError, match="--extra-data-dir"):
        protocols.resolve(task, "local:part", roots)
    with_extra = DataRoots(roots.klue, tmp_path / "extra")
    assert "local:part" in protocols.available(task, with_extra)
    data = protocols.resolve(task, "local:part", with_extra)
    assert (len(data.train), len(data.eval)) == (50, 300) and data.sources[0].path == "part/train.json"
    assert data.protocol == "local:part" and not data.official


def test_reader_errors_surface(roots: DataRoots) -> None:
    def bad_reader(path: Path, issues: ProblemLog, purpose: ReadPurpose = "validate") -> list[Item]:
        issues.error("line 3", "broken")
        return []

    with pytest.raises(DataError, match="line 3: error: broken"):
        protocols.resolve(fake_task(read=bad_reader), "local:dev-80-20", roots)


def _extra_roots(klue_data_dir: Path, shared_data_dir: Path) -> DataRoots:
    return DataRoots(klue_data_dir, shared_data_dir)


def test_real_ner_protocols(klue_data_dir: Path, shared_data_dir: Path) -> None:
    roots = _extra_roots(klue_data_dir, shared_data_dir)
    task = registry.get("ner")
    assert {"local:dev-80-20", "local:ner-train5000"} <= set(protocols.available(task, roots))
    data = protocols.resolve(task, task.default_local_protocol, roots)
    assert (len(data.train), len(data.eval)) == (5000, 5000)
    assert data.sources[1].git_blob == task.file("dev").git_blob
    assert "not official" in data.description
    split = protocols.resolve(task, "local:dev-80-20", roots)
    assert not {r.guid for r in split.train} & {r.guid for r in split.eval}
    assert len(split.train) + len(split.eval) == 5000


def test_real_dp_protocols(klue_data_dir: Path, shared_data_dir: Path) -> None:
    roots = _extra_roots(klue_data_dir, shared_data_dir)
    task = registry.get("dp")
    data = protocols.resolve(task, "local:ud-gsd", roots)
    assert (len(data.train), len(data.eval)) == (950, 989) and data.train[0].label_set == "ud"
    assert "not official" in data.description
    split = protocols.resolve(task, "local:dev-80-20", roots)
    assert len(split.train) + len(split.eval) == 2000 and split.selection is None


def test_real_nli_premise_groups_stay_whole(klue_data_dir: Path) -> None:
    try:
        task = registry.get("nli")
    except KeyError:
        pytest.skip("the NLI task is not registered yet")
    data = protocols.resolve(task, "local:dev-80-20", DataRoots(klue_data_dir, None))
    train_groups = {task.group_key(r) for r in data.train}
    eval_groups = {task.group_key(r) for r in data.eval}
    assert not train_groups & eval_groups
    assert len(data.train) + len(data.eval) == 3000 and len(train_groups | eval_groups) == 1000
    assert "1,000 groups" in data.description


@pytest.mark.slow
def test_every_registered_protocol_describes_itself_as_not_official(klue_data_dir: Path,
                                                                     shared_data_dir: Path) -> None:
    roots = _extra_roots(klue_data_dir, shared_data_dir)
    for task in registry.all_tasks():
        for name in protocols.available(task, roots):
            if name == "official":
                continue
            data = protocols.resolve(task, name, roots)
            assert not data.official and "not" in data.description and "official" in data.description, name
            assert data.description.count(". ") == 0  # one sentence
            assert all(len(s.git_blob) == 40 for s in data.sources)


def test_files_protocol_keeps_groups_whole_and_is_never_official(roots: DataRoots, tmp_path: Path) -> None:
    """`files` on one file: selection and eval carved by group hash (3 items per group), train the rest."""
    task = fake_task()
    train = roots.klue / "fake" / "train.json"
    data = protocols.resolve_files(task, train, eval_fraction=0.25)
    parts = [data.train, data.selection or [], data.eval]
    assert all(parts) and sum(map(len, parts)) == 600
    assert not (groups(parts[0]) & groups(parts[1]) or groups(parts[0]) & groups(parts[2])
                or groups(parts[1]) & groups(parts[2]))
    assert data.protocol == "files" and not data.official and "not official" in data.description
    assert data.description.count(". ") == 0  # one sentence
    assert [s.n_examples for s in data.sources] == list(map(len, parts))
    assert {s.git_blob for s in data.sources} == {git_blob_sha1(train)}
    # two files: eval whole, selection still carved from train; the heldout protocol's slice exactly
    two = protocols.resolve_files(task, train, roots.klue / "fake" / "dev.json")
    held = protocols.resolve(task, "heldout", roots)
    assert (two.train, two.selection, two.eval) == (held.train, held.selection, held.eval)
    # `files` and `hf` stay out of the generic list: neither reads the data roots' official files
    assert "files" not in protocols.names(task) and "hf" not in protocols.available(task, roots)
