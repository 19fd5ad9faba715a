"""The site's model store (klue.leaderboard.model_store, docs/leaderboard.md "Model store"): what enters it
(safetensors directories and GGUF files; pickles by name and by content, remote code, non-GGUF refused with
the reason), that a refused or interrupted add leaves nothing, what a submission's spec may name (`admit`) and
the spec a cell runs (`materialise`), a hub model fetched from a hub on 127.0.0.1 (tests/leaderboard/fake_hub.py),
the `klue leaderboard model` commands, and the real multilingual-e5-small and SmolLM2 GGUF."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest
from fake_hub import repo_of, serving

from cli_in_process import Done, klue_in_process
from klue.errors import DataError
from klue.families import check_specs
from klue.leaderboard import model_store
from klue.leaderboard.model_store import (
    FAMILY_NAMES,
    GGUF,
    HF_DIR,
    AdmittedModel,
    ModelRefused,
    add_model,
    admit,
    check_model_files,
    list_models,
    materialise,
    remove_model,
)

ALL = FAMILY_NAMES
OPEN = {"families": ALL, "has_private_part": True, "allow_endpoints": False}


def make_site(root: Path) -> Path:
    """A directory the store takes for a site (its site.json; the store reads nothing else of it)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "site.json").write_text("{}", encoding="utf-8")
    return root


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return make_site(tmp_path / "site")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BertModel with its tokenizer, saved as transformers saves it (model.safetensors)."""
    import torch
    from transformers import AutoConfig, AutoModel

    from klue.models.tiny import make_tiny_model_dir

    torch.manual_seed(0)
    path = make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "bert", texts=["한국어 문장 하나", "두 번째 문장"] * 20,
                               vocab_size=120, hidden_size=16, layers=1, heads=2, intermediate_size=32, max_len=64)
    model = AutoModel.from_config(AutoConfig.from_pretrained(str(path)))
    assert type(model).__name__ == "BertModel"
    model.save_pretrained(str(path))
    assert (path / "model.safetensors").is_file()
    return path


def copy_of(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def pickled_bert(tiny_bert: Path, target: Path) -> Path:
    """The same model with its weights pickled, as `save_pretrained(safe_serialization=False)` wrote them up to
    transformers 4 (transformers 5 ignores the flag and writes safetensors): torch.save of the state dict."""
    import torch
    from safetensors.torch import load_file

    copy_of(tiny_bert, target)
    torch.save(load_file(str(target / "model.safetensors")), target / "pytorch_model.bin")
    (target / "model.safetensors").unlink()
    return target


def fake_gguf(path: Path, magic: bytes = b"GGUF", version: int = 3) -> Path:
    path.write_bytes(magic + version.to_bytes(4, "little") + bytes(range(256)) * 4)
    return path


def store_leftovers(site: Path) -> list[str]:
    store = site / "models"
    return sorted(p.name for p in store.iterdir()) if store.is_dir() else []


def tree_sha256(directory: Path) -> str:
    """`cd DIR && find . -type f -printf '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum`, in Python."""
    names = sorted((p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()),
                   key=lambda name: name.encode())
    listing = "".join(f"{hashlib.sha256((directory / n).read_bytes()).hexdigest()}  {n}\n" for n in names)
    return hashlib.sha256(listing.encode()).hexdigest()


# ------------------------------------------------------------------------------------------------ adding


def test_a_safetensors_directory_is_stored_whole_with_its_hashes(site: Path, tiny_bert: Path) -> None:
    stored = add_model(site, "tiny-bert", tiny_bert)
    assert stored.kind == HF_DIR and stored.name == "tiny-bert"
    assert stored.path == site.resolve() / "models" / "tiny-bert" / "model"
    names = sorted(p.name for p in tiny_bert.iterdir())
    assert sorted(p.name for p in stored.path.iterdir()) == names
    for name in names:
        assert (stored.path / name).read_bytes() == (tiny_bert / name).read_bytes()
    assert stored.sha256 == tree_sha256(tiny_bert)
    assert stored.bytes == sum(p.stat().st_size for p in tiny_bert.iterdir())
    manifest = json.loads((stored.path.parent / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["files"]["model.safetensors"]["sha256"] == hashlib.sha256(
        (tiny_bert / "model.safetensors").read_bytes()).hexdigest()
    assert list_models(site) == [stored]


def test_hidden_files_are_left_out_and_a_git_lfs_pointer_is_no_weights(site: Path, tiny_bert: Path,
                                                                         tmp_path: Path) -> None:
    clone = copy_of(tiny_bert, tmp_path / "clone")
    (clone / ".git" / "objects").mkdir(parents=True)
    (clone / ".git" / "objects" / "ab").write_bytes(b"\x80\x04not a model file")
    (clone / ".gitattributes").write_text("*.safetensors filter=lfs\n", encoding="utf-8")
    stored = add_model(site, "clone", clone)
    assert sorted(p.name for p in stored.path.iterdir()) == sorted(p.name for p in tiny_bert.iterdir())
    assert stored.sha256 == tree_sha256(tiny_bert)
    (clone / "model.safetensors").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\n"
                                             "size 1234\n", encoding="utf-8")  # cloned without git-lfs
    with pytest.raises(ModelRefused, match="model.safetensors is not a safetensors file"):
        add_model(site, "pointer", clone)


def test_a_gguf_file_is_stored_and_its_sha256_is_the_files_own(site: Path, tmp_path: Path) -> None:
    source = fake_gguf(tmp_path / "m.gguf")
    stored = add_model(site, "m.gguf", source)
    assert (stored.kind, stored.path.name) == (GGUF, "model.gguf")
    assert stored.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert stored.path.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("magic, version, reason", [(b"PK\x03\x04", 3, "not a GGUF file (a pickle"),
                                                     (b"GGML", 3, "not a GGUF file (its first bytes are b'GGML'"),
                                                     (b"GGUF", 99, "version 99")])
def test_a_gguf_that_is_not_gguf_is_refused(site: Path, tmp_path: Path, magic: bytes, version: int,
                                            reason: str) -> None:
    source = fake_gguf(tmp_path / "m.gguf", magic, version)
    with pytest.raises(ModelRefused, match=reason.replace("(", r"\(")):
        add_model(site, "m.gguf", source)
    assert store_leftovers(site) == []


def test_pickled_weights_are_refused_by_name(site: Path, tiny_bert: Path, tmp_path: Path) -> None:
    source = pickled_bert(tiny_bert, tmp_path / "pickled")
    with pytest.raises(ModelRefused) as refused:
        add_model(site, "pickled", source)
    message = refused.value.summary()
    assert "pickle files (pytorch_model.bin)" in message and "runs whatever code" in message
    assert "no safetensors weights" in message
    assert store_leftovers(site) == []
    # a single pickle file is refused as such too, not only for lacking the GGUF magic
    with pytest.raises(ModelRefused, match=r"pickle files \(pytorch_model.bin\)"):
        add_model(site, "pickled", source / "pytorch_model.bin")


def test_a_pickle_beside_safetensors_is_refused_by_its_content(site: Path, tiny_bert: Path, tmp_path: Path) -> None:
    source = copy_of(tiny_bert, tmp_path / "with-pickles")
    pickled_bert(tiny_bert, tmp_path / "p")
    shutil.copy(tmp_path / "p" / "pytorch_model.bin", source / "extra_weights.dat")  # torch.save: a zip
    (source / "state.data").write_bytes(pickle.dumps({"a": 1}, protocol=4))
    with pytest.raises(ModelRefused, match=r"pickle files \(extra_weights.dat, state.data\)"):
        check_model_files(source)
    # and a pickle named .safetensors
    disguised = pickled_bert(tiny_bert, tmp_path / "disguised")
    (disguised / "pytorch_model.bin").rename(disguised / "model.safetensors")
    with pytest.raises(ModelRefused, match=r"model.safetensors is a pickle named .safetensors"):
        add_model(site, "disguised", disguised)
    assert store_leftovers(site) == []


def test_remote_code_is_refused(site: Path, tiny_bert: Path, tmp_path: Path) -> None:
    source = copy_of(tiny_bert, tmp_path / "remote")
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoModel": "modeling_tiny.TinyModel"}
    (source / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ModelRefused, match=r"config.json asks for the model's own Python \(auto_map"):
        add_model(site, "remote", source)
    (source / "modeling_tiny.py").write_text("import os\n", encoding="utf-8")
    with pytest.raises(ModelRefused, match=r"Python files \(modeling_tiny.py\)"):
        add_model(site, "remote", source)
    tokenizer_only = copy_of(tiny_bert, tmp_path / "tokenizer-remote")
    settings = json.loads((tokenizer_only / "tokenizer_config.json").read_text(encoding="utf-8"))
    settings["auto_map"] = {"AutoTokenizer": ["tok.Tok", None]}
    (tokenizer_only / "tokenizer_config.json").write_text(json.dumps(settings), encoding="utf-8")
    with pytest.raises(ModelRefused, match=r"tokenizer_config.json asks for the model's own Python"):
        check_model_files(tokenizer_only)
    modules = copy_of(tiny_bert, tmp_path / "st-modules")
    (modules / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "evil.Module"}]),
                                          encoding="utf-8")
    with pytest.raises(ModelRefused, match=r"modules outside sentence-transformers \(evil.Module\)"):
        check_model_files(modules)
    assert store_leftovers(site) == []


def test_a_directory_without_safetensors_or_config_is_refused(site: Path, tiny_bert: Path, tmp_path: Path) -> None:
    source = copy_of(tiny_bert, tmp_path / "no-weights")
    (source / "model.safetensors").unlink()
    with pytest.raises(ModelRefused, match="no safetensors weights"):
        add_model(site, "x", source)
    (source / "config.json").unlink()
    with pytest.raises(ModelRefused, match="no config.json"):
        add_model(site, "x", source)
    with pytest.raises(ModelRefused, match="no such file or directory"):
        add_model(site, "x", tmp_path / "absent")


def test_an_interrupted_add_leaves_nothing(site: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_put = model_store._put
    calls: list[Path] = []

    def interrupted(source: Path, target: Path, link: bool, counter: Any) -> tuple[str, int]:
        calls.append(source)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_put(source, target, link, counter)

    monkeypatch.setattr(model_store, "_put", interrupted)
    with pytest.raises(KeyboardInterrupt):
        add_model(site, "tiny-bert", tiny_bert)
    assert len(calls) == 2
    assert store_leftovers(site) == []
    assert list_models(site) == []


def test_names_are_checked_and_an_entry_is_never_replaced(site: Path, tiny_bert: Path, tmp_path: Path) -> None:
    for bad in ("../x", ".hidden", "a/b", "", "classic", "x" * 129, "-x"):
        with pytest.raises(ModelRefused):
            add_model(site, bad, tiny_bert)
    first = add_model(site, "m", tiny_bert)
    with pytest.raises(ModelRefused, match="already holds 'm'"):
        add_model(site, "m", fake_gguf(tmp_path / "other.gguf"))
    assert list_models(site) == [first]
    assert store_leftovers(site) == ["m"]
    with pytest.raises(Exception, match="not a leaderboard site"):
        add_model(tmp_path, "m", tiny_bert)


def test_hard_linked_files_are_checked_when_used(site: Path, tiny_bert: Path, tmp_path: Path) -> None:
    source = copy_of(tiny_bert, tmp_path / "linked")
    stored = add_model(site, "linked", source, link=True)
    assert os.path.samefile(stored.path / "model.safetensors", source / "model.safetensors")
    admitted = admit(site, "linked", **OPEN)
    assert materialise(site, admitted) == str(stored.path)
    with (source / "model.safetensors").open("r+b") as handle:  # the source changed in place, after the add
        handle.seek(-4, os.SEEK_END)
        handle.write(b"\0\1\2\3")
    with pytest.raises(ModelRefused, match=r"changed since it was added \(model.safetensors: SHA-256"):
        materialise(site, admitted)
    assert materialise(site, admitted, verify=False) == str(stored.path)
    (stored.path / "added.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ModelRefused, match=r"changed since it was added \(files added or removed: added.json"):
        materialise(site, admitted)


def test_link_across_file_systems_is_refused_with_what_to_do(site: Path, tmp_path: Path) -> None:
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(site).st_dev:
        pytest.skip("no second file system (/dev/shm) beside the test's temporary directory")
    source = fake_gguf(other / f"klue-store-test-{os.getpid()}.gguf")
    try:
        with pytest.raises(DataError, match="cannot hard-link it into the store .*add it without --link"):
            add_model(site, "m.gguf", source, link=True)
    finally:
        source.unlink()
    assert store_leftovers(site) == []


def test_remove_takes_the_entry_out(site: Path, tmp_path: Path) -> None:
    add_model(site, "a.gguf", fake_gguf(tmp_path / "a.gguf"))
    add_model(site, "b.gguf", fake_gguf(tmp_path / "b.gguf", version=2))
    remove_model(site, "a.gguf")
    assert [m.name for m in list_models(site)] == ["b.gguf"]
    assert store_leftovers(site) == ["b.gguf"]
    with pytest.raises(ModelRefused, match="no model named 'a.gguf'.*the store has: b.gguf"):
        remove_model(site, "a.gguf")


# ------------------------------------------------------------------------------------- admit, materialise


@pytest.fixture
def stocked(site: Path, tiny_bert: Path, tmp_path: Path) -> Path:
    add_model(site, "tiny-bert", tiny_bert)
    add_model(site, "m.gguf", fake_gguf(tmp_path / "m.gguf"))
    return site


@pytest.mark.parametrize("spec", ["/x", "./x", "../x", "~/x", "emb:/x", "emb:./m", "hf:/x.gguf", "hf:~/m.gguf",
                                  "hf:../m.gguf", "/root/.cache/klue-real-models/me5-small", "a/b/c",
                                  "C:\\models\\x", "emb:~/e5"])
def test_a_path_on_the_servers_disk_is_refused(stocked: Path, spec: str) -> None:
    with pytest.raises(ModelRefused, match=r"names a path on the server's disk.*the store has: m.gguf, tiny-bert"):
        admit(stocked, spec, **OPEN)


def test_store_names_hub_ids_and_classic_are_admitted(stocked: Path) -> None:
    assert admit(stocked, "emb:tiny-bert", **OPEN) == AdmittedModel("emb:tiny-bert", "embedding", "store",
                                                                      "tiny-bert", None)
    assert admit(stocked, "tiny-bert", **OPEN) == AdmittedModel("tiny-bert", "encoder", "store", "tiny-bert", None)
    assert admit(stocked, "hf:m.gguf", **OPEN) == AdmittedModel("hf:m.gguf", "llm", "store", "m.gguf", None)
    assert admit(stocked, "klue/roberta-base", **OPEN) == AdmittedModel("klue/roberta-base", "encoder", "hub",
                                                                         None, "klue/roberta-base")
    assert admit(stocked, "hf:HuggingFaceTB/SmolLM2-135M", **OPEN).hub_id == "HuggingFaceTB/SmolLM2-135M"
    assert admit(stocked, "classic", **OPEN) == AdmittedModel("classic", "classic", "builtin", None, None)
    root = stocked.resolve()
    assert materialise(stocked, admit(stocked, "emb:tiny-bert", **OPEN)) == f"emb:{root}/models/tiny-bert/model"
    assert materialise(stocked, admit(stocked, "tiny-bert", **OPEN)) == f"{root}/models/tiny-bert/model"
    assert materialise(stocked, admit(stocked, "hf:m.gguf", **OPEN)) == f"hf:{root}/models/m.gguf/model.gguf"
    assert materialise(stocked, admit(stocked, "classic", **OPEN)) == "classic"
    check_specs([materialise(stocked, admit(stocked, spec, **OPEN))
                 for spec in ("emb:tiny-bert", "tiny-bert", "hf:m.gguf", "classic")])


def test_unknown_names_and_wrong_kinds_are_refused_with_what_the_store_has(stocked: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelRefused, match=r"no model named 'e5-small' .*the store has: m.gguf, tiny-bert"):
        admit(stocked, "emb:e5-small", **OPEN)
    with pytest.raises(ModelRefused, match=r"'m.gguf' is a GGUF file, which only the LLM family runs"):
        admit(stocked, "emb:m.gguf", **OPEN)
    with pytest.raises(ModelRefused, match="not from the hub"):
        admit(stocked, "hf:org/m.gguf", **OPEN)
    empty = make_site(tmp_path / "empty")
    with pytest.raises(ModelRefused, match=r"the store is empty \(an admin adds models with `klue leaderboard"):
        admit(empty, "hf:smollm2.gguf", **OPEN)


def test_a_family_the_site_does_not_open_is_refused(stocked: Path) -> None:
    with pytest.raises(ModelRefused, match=r"of the llm family, which this site does not evaluate \(open to model "
                                           r"submissions: classic, embedding\)"):
        admit(stocked, "hf:m.gguf", families=["classic", "embedding"], has_private_part=True, allow_endpoints=False)
    with pytest.raises(ModelRefused, match="of the encoder family"):
        admit(stocked, "tiny-bert", families=["embedding"], has_private_part=False, allow_endpoints=False)
    with pytest.raises(ModelRefused, match="of the classic family"):
        admit(stocked, "classic", families=["llm"], has_private_part=False, allow_endpoints=False)


@pytest.mark.parametrize("spec", ["openai:gpt-x@http://127.0.0.1:8000/v1",
                                  "emb:openai:e5@http://user:secret@10.0.0.1:9000/v1"])
def test_endpoints_are_refused_on_a_site_with_a_private_part_unless_allowed(stocked: Path, spec: str) -> None:
    with pytest.raises(ModelRefused, match="the endpoint would see the hidden inputs") as refused:
        admit(stocked, spec, families=ALL, has_private_part=True, allow_endpoints=False)
    assert "secret" not in refused.value.summary()
    with pytest.raises(ModelRefused, match="which this site does not evaluate") as refused:
        admit(stocked, spec, families=["classic"], has_private_part=False, allow_endpoints=True)
    assert "secret" not in refused.value.summary()
    for private, allowed in ((True, True), (False, False)):
        admitted = admit(stocked, spec, families=ALL, has_private_part=private, allow_endpoints=allowed)
        assert (admitted.source, admitted.store_name, admitted.hub_id) == ("endpoint", None, None)
        assert materialise(stocked, admitted) == spec
    with pytest.raises(ModelRefused, match="openai:MODEL@"):  # the backend's own syntax check
        admit(stocked, "openai:no-url", families=ALL, has_private_part=False, allow_endpoints=True)


# ---------------------------------------------------------------------------------------------------- hub


def test_a_hub_model_is_fetched_into_the_site_and_checked(stocked: Path, tiny_bert: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)  # the hub here is on 127.0.0.1
    good = repo_of(tiny_bert)
    with_pickle = {**good, "pytorch_model.bin": b"\x80\x04junk", "modeling_x.py": b"import os\n"}
    remote = {**good, "config.json": json.dumps({**json.loads(good["config.json"]), "auto_map": {"AutoModel": "x.Y"}})
              .encode()}
    pickled_only = {name: data for name, data in good.items() if name != "model.safetensors"}
    pickled_only["pytorch_model.bin"] = b"\x80\x04junk"
    repos = {"org/tiny": with_pickle, "org/remote": remote, "org/pickled": pickled_only}
    with serving(repos) as hub:
        spec = materialise(stocked, admit(stocked, "org/tiny", **OPEN), endpoint=hub.url)
        path = Path(spec)
        assert path.is_relative_to(stocked.resolve() / "hub-cache")
        assert sorted(p.name for p in path.iterdir()) == sorted(good)  # no pickle, no Python fetched
        assert "pytorch_model.bin" not in hub.fetched() and "modeling_x.py" not in hub.fetched()
        for name, data in good.items():
            assert (path / name).read_bytes() == data
        emb = materialise(stocked, admit(stocked, "emb:org/tiny", **OPEN), endpoint=hub.url)
        assert emb == f"emb:{path}"
        check_specs([spec, emb])
        with pytest.raises(ModelRefused, match=r"org/remote \(from the hub\): .*auto_map"):
            materialise(stocked, admit(stocked, "org/remote", **OPEN), endpoint=hub.url)
        with pytest.raises(ModelRefused, match=r"org/pickled \(from the hub\): .*no safetensors weights"):
            materialise(stocked, admit(stocked, "org/pickled", **OPEN), endpoint=hub.url)
        with pytest.raises(ModelRefused, match="the hub has no such public model"):
            materialise(stocked, admit(stocked, "org/absent", **OPEN), endpoint=hub.url)
    from klue.models.loading import load_encoder

    loaded = load_encoder(path)  # what the encoder family's fine-tune opens
    assert loaded.source == "pretrained" and loaded.config.hidden_size == 16


# ---------------------------------------------------------------------------------------------------- CLI


def klue(*args: str | Path) -> Done:
    """In this process (tests/cli_in_process.py): the subject is what the commands print, exit with and leave
    in the store (plain files, no Django), not their process; a process each cost about 1.5 CPU-s."""
    return klue_in_process(*map(str, args))


def test_the_model_commands(site: Path, tiny_bert: Path, tmp_path: Path) -> None:
    done = klue("leaderboard", "model", "add", site, "tiny-bert", tiny_bert)
    assert done.returncode == 0, done.stderr
    size = sum(p.stat().st_size for p in tiny_bert.iterdir())
    assert f"stored tiny-bert: hf-dir, {size:,} bytes" in done.stdout
    assert f"sha256 {tree_sha256(tiny_bert)}" in done.stdout
    refused = klue("leaderboard", "model", "add", site, "pickled", pickled_bert(tiny_bert, tmp_path / "pickled"))
    assert refused.returncode == 2
    assert "klue: error:" in refused.stderr and "pickle files (pytorch_model.bin)" in refused.stderr
    listed = klue("leaderboard", "model", "list", site)
    assert listed.returncode == 0 and listed.stdout.startswith("tiny-bert  hf-dir") and "pickled" not in listed.stdout
    assert klue("leaderboard", "model", "remove", site, "tiny-bert").stdout == "removed tiny-bert from the store\n"
    gone = klue("leaderboard", "model", "remove", site, "tiny-bert")
    assert gone.returncode == 2 and "the store is empty" in gone.stderr
    assert store_leftovers(site) == []


# ------------------------------------------------------------------------------------------- real models


@pytest.mark.slow  # the store reads and hashes 560 MB
def test_real_e5_and_smollm2_enter_the_store_and_give_specs_the_families_accept(site: Path) -> None:
    from real_models import e5_and_smollm2_or_skip

    e5, smollm2 = e5_and_smollm2_or_skip()
    # hard links where the site is on the models' file system (the hashes are still read and recorded)
    same_fs = os.stat(site).st_dev == os.stat(e5).st_dev == os.stat(smollm2).st_dev
    link = ["--link"] if same_fs else []
    for name, source in (("e5-small", e5), ("smollm2.gguf", smollm2)):
        done = klue("leaderboard", "model", "add", site, name, source, *link)
        assert done.returncode == 0, done.stderr
        assert f"stored {name}: {'gguf' if name.endswith('.gguf') else 'hf-dir'}, " in done.stdout
    assert hashlib.sha256(smollm2.read_bytes()).hexdigest() == {m.name: m for m in list_models(site)}[
        "smollm2.gguf"].sha256
    specs = {spec: materialise(site, admit(site, spec, **OPEN)) for spec in ("emb:e5-small", "e5-small",
                                                                             "hf:smollm2.gguf")}
    root = site.resolve()
    assert specs == {"emb:e5-small": f"emb:{root}/models/e5-small/model",
                     "e5-small": f"{root}/models/e5-small/model",
                     "hf:smollm2.gguf": f"hf:{root}/models/smollm2.gguf/model.gguf"}
    check_specs(specs.values())
    from klue.families import family_of

    assert [family_of(s).name for s in specs.values()] == ["embedding", "encoder", "llm"]
