"""The site's model store (`SITE/models/`) and what a model submission may name (docs/leaderboard.md,
"Model store").

```
SITE/models/NAME/
  manifest.json    what was stored: kind, SHA-256, size, each file's hash, when, from where
  model/           kind "hf-dir": a Hugging Face directory whose weights are safetensors
  model.gguf       kind "gguf": one GGUF file
SITE/hub-cache/    hub models fetched for submissions (huggingface_hub's cache layout)
```

Weights enter only in formats whose loading runs no code: safetensors or GGUF, never a pickle (unpickling runs
whatever the file says), and never a model that asks for Python of its own (`auto_map`, `*.py` files):
`check_model_files` refuses them with the reason, on the way into the store and after every hub download.
An entry appears whole or not at all: it is written into a hidden sibling directory and renamed into place.

A submission's spec names a stored model (`emb:e5-small`, `hf:smollm2.gguf`, `e5-small`), a hub id
(`org/name`, fetched into `SITE/hub-cache`), `classic`, or an endpoint (`openai:...`); a path on the
server's disk never (`admit`). `materialise` turns an admitted spec into the klue model spec a benchmark cell
runs on this server. No Django here: the CLI and the workers both use it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import secrets
import shutil
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.errors import DataError, UnreachableError
from klue.io.atomic import temp_dir_in
from klue.io.redact import redact_text
from klue.leaderboard.config import FAMILIES as FAMILY_NAMES  # the site config's models.families

MODELS_DIR = "models"
HUB_CACHE_DIR = "hub-cache"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "klue.model-store/1"
HF_DIR, GGUF = "hf-dir", "gguf"
STORED_FILE = {HF_DIR: "model", GGUF: "model.gguf"}  # inside SITE/models/NAME/

GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (1, 2, 3)
ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since torch 1.6: a zip holding a pickle
PICKLE_PROTOCOLS = range(2, 6)  # a pickle of protocol 2+ starts with b"\x80" and its protocol number
# Keys a JSON file of a model uses to name Python classes shipped with the model (transformers' `auto_map`;
# pipelines' `custom_pipelines`): loading them runs that Python.
CODE_KEYS = ("auto_map", "custom_pipelines")
# sentence-transformers builds each module named in modules.json by importing its class path: only its own.
ST_MODULE_PREFIX = "sentence_transformers."
# What a hub download fetches: weights, configs and tokenizer files; never a pickle, never Python.
HUB_FILES = ("*.safetensors", "*.json", "*.txt", "*.model", "*.tiktoken")

_STORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_HUB_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_HUB_ID = re.compile(rf"{_HUB_PART}/{_HUB_PART}")
_CHUNK = 1 << 20


class ModelRefused(DataError):
    """A model the store or a submission refuses, with the reason (exit 2 in the CLI, HTTP 400 on the site)."""


@dataclass(frozen=True)
class StoredModel:
    """One entry of SITE/models/."""

    name: str  # e5-small | smollm2.gguf
    kind: str  # HF_DIR | GGUF
    path: Path  # absolute path of the stored copy inside the site
    sha256: str  # for a GGUF, the file's own (`sha256sum`); for a directory, see `_tree_digest`
    bytes: int
    added_at: str  # UTC, ISO 8601


@dataclass(frozen=True)
class AdmittedModel:
    """A submission's model spec, accepted by the site's policy (`admit`)."""

    spec: str  # as submitted: classic | emb:e5-small | hf:smollm2.gguf | e5-small | org/name
    family: str  # one of FAMILY_NAMES
    source: str  # "builtin" (classic) | "store" | "hub" | "endpoint"
    store_name: str | None
    hub_id: str | None


# ---------------------------------------------------------------------------------------------- the checks


def check_model_files(path: Path) -> str:
    """HF_DIR for a Hugging Face directory whose weights are safetensors, GGUF for one GGUF file; ModelRefused
    with every reason otherwise: a pickle (by name or by its first bytes), a directory without safetensors
    weights or config.json, a model asking for remote code (`auto_map`, `*.py` files), a file that is not GGUF."""
    if path.is_file():
        _check_gguf(path)
        return GGUF
    if not path.is_dir():
        raise ModelRefused("no such file or directory", path)
    reasons = _directory_reasons(path)
    if reasons:
        raise ModelRefused("; ".join(reasons), path)
    _check_with_loader(path)
    return HF_DIR


def _check_gguf(path: Path) -> None:
    if path.suffix.lower() in _pickle_suffixes():
        raise ModelRefused(_pickle_reason([path.name]), path)
    with path.open("rb") as handle:
        head = handle.read(8)
    if head[:4] != GGUF_MAGIC:
        what = "a pickle" if _is_pickle(head) else f"its first bytes are {head[:4]!r}"
        raise ModelRefused(f"not a GGUF file ({what}, not {GGUF_MAGIC!r}); a single file must be a GGUF model, "
                           "anything else a Hugging Face directory with safetensors weights", path)
    version = struct.unpack("<I", head[4:8])[0] if len(head) == 8 else None
    if version not in GGUF_VERSIONS:
        raise ModelRefused(f"a GGUF header with version {version}, which no GGUF reader knows "
                           f"({', '.join(map(str, GGUF_VERSIONS))})", path)


def _pickle_suffixes() -> tuple[str, ...]:
    from klue.models.loading import PICKLE_SUFFIXES

    return PICKLE_SUFFIXES


def _pickle_reason(names: Sequence[str]) -> str:
    return (f"pickle files ({', '.join(names)}): loading a pickle runs whatever code it holds, so the site takes "
            "weights only as safetensors or GGUF; convert them where you trust the file (e.g. "
            "`AutoModel.from_pretrained(DIR).save_pretrained(DIR)` writes model.safetensors) and leave the "
            "pickles out")


def _is_pickle(head: bytes) -> bool:
    return head[:4] == ZIP_MAGIC or (len(head) >= 2 and head[0] == 0x80 and head[1] in PICKLE_PROTOCOLS)


def _files(root: Path) -> Iterator[Path]:
    """Every file under `root` (symbolic links to files followed), sorted; a linked directory is an error.
    Hidden ones are left out: a clone's `.git/`, huggingface_hub's `.cache/`, `.gitattributes` are no part of
    the model."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        for name in dirs:
            if (Path(folder) / name).is_symlink():
                raise ModelRefused(f"{name} is a symbolic link to a directory; give the directory itself",
                                   Path(folder) / name)
        for name in sorted(names):
            if not name.startswith("."):
                yield Path(folder) / name


def _directory_reasons(root: Path) -> list[str]:
    """Why the directory `root` cannot be stored, all at once (empty when it can)."""
    files = [(p.relative_to(root).as_posix(), p) for p in _files(root)]
    pickles = [rel for rel, p in files if p.suffix.lower() in _pickle_suffixes()]
    code = [rel for rel, p in files if p.suffix.lower() == ".py"]
    reasons: list[str] = []
    for rel, file in files:
        if rel in pickles or rel in code:
            continue
        if file.suffix == ".safetensors":
            problem = _safetensors_problem(file)
            if problem:
                reasons.append(f"{rel} {problem}")
            continue
        with file.open("rb") as handle:
            head = handle.read(4)
        if _is_pickle(head):
            pickles.append(rel)
        elif file.suffix == ".json":
            reasons.extend(_json_reasons(rel, file))
    if pickles:
        reasons.insert(0, _pickle_reason(pickles))
    if code:
        reasons.insert(0, f"Python files ({', '.join(code)}): a model that ships its own code is refused (the site "
                          "never runs it: trust_remote_code is off)")
    top = {rel for rel, _ in files}
    if not any("/" not in rel and rel.endswith(".safetensors") for rel in top):
        reasons.append("no safetensors weights (*.safetensors) at the top of the directory: the site loads weights "
                       "only from safetensors")
    if "config.json" not in top:
        reasons.append("no config.json: not a Hugging Face model directory")
    if "model.safetensors.index.json" in top:
        reasons.extend(_shard_reasons(root))
    return reasons


def _safetensors_problem(file: Path) -> str | None:
    """Why `file` is not a safetensors file (its 8-byte header length, then a JSON header), or None."""
    size = file.stat().st_size
    with file.open("rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            return "is too short for a safetensors file"
        length = struct.unpack("<Q", head)[0]
        if _is_pickle(head) and not 0 < length <= size - 8:
            return "is a pickle named .safetensors"
        if not 0 < length <= min(size - 8, 100 << 20):
            return "is not a safetensors file (its header length does not fit the file)"
        header = handle.read(length)
    try:
        parsed = json.loads(header)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return "is not a safetensors file (its header is not JSON)"
    return None if isinstance(parsed, dict) else "is not a safetensors file (its header is not a JSON object)"


def _json_reasons(rel: str, file: Path) -> list[str]:
    try:
        value = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return [f"{rel} is not JSON ({error})"]
    reasons = [f"{rel} asks for the model's own Python ({key}: {json.dumps(found)[:120]}); trust_remote_code is off, "
               "so it could not load here" for key, found in _code_keys(value)]
    if rel == "modules.json" and isinstance(value, list):
        foreign = sorted({str(m.get("type")) for m in value if isinstance(m, dict)
                          and not str(m.get("type", "")).startswith(ST_MODULE_PREFIX)})
        if foreign:
            reasons.append(f"modules.json names modules outside sentence-transformers ({', '.join(foreign)}): "
                           "their code would run")
    return reasons


def _code_keys(value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(key, value) of every CODE_KEYS entry in the JSON `value`, down a few levels (composite configs)."""
    if depth > 3:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key in CODE_KEYS:
                yield key, item
            elif isinstance(item, (dict, list)):
                yield from _code_keys(item, depth + 1)
    elif isinstance(value, list) and depth < 2:
        for item in value[:64]:
            yield from _code_keys(item, depth + 1)


def _shard_reasons(root: Path) -> list[str]:
    try:
        index = json.loads((root / "model.safetensors.index.json").read_text(encoding="utf-8"))
        shards = set(index["weight_map"].values())
    except (ValueError, KeyError, TypeError, AttributeError):
        return ["model.safetensors.index.json has no weight_map"]
    missing = sorted(s for s in shards if not (root / s).is_file())
    return [f"model.safetensors.index.json names shards that are not there: {', '.join(missing)}"] if missing else []


def _check_with_loader(path: Path) -> None:
    """klue's own loading check (klue.models.loading), the one every loader goes through."""
    from klue.models.loading import check_loads_without_code

    try:
        check_loads_without_code(path)
    except ModelRefused:
        raise
    except DataError as error:
        raise ModelRefused(error.problems) from None


# ------------------------------------------------------------------------------------------------ the store


def models_dir(site: Path) -> Path:
    return site.resolve() / MODELS_DIR


def _check_site(site: Path) -> None:
    from klue.leaderboard.site import Site

    Site(site).read()  # not a site: DataError saying how to make one


def check_store_name(name: str) -> None:
    """A store name is one path component: letters, digits, `.`, `_`, `-`, not starting with `.` or `-`."""
    if not _STORE_NAME.fullmatch(name) or name.endswith("."):
        raise ModelRefused(f"{name!r} is not a store name: use letters, digits, '.', '_' and '-' (at most 128, "
                           "starting with a letter or digit; no '/')")
    if name == "classic":
        raise ModelRefused("'classic' names the classic baselines; give the model another name")


def add_model(site: Path, name: str, source: Path, *, link: bool = False,
              progress: Callable[[int, int], None] | None = None) -> StoredModel:
    """Check `source` (`check_model_files`), copy it into SITE/models/NAME and return the entry. The copy is
    checked again and hashed as it is written; it appears only when whole (a refused or interrupted add
    leaves nothing). `link`: hard-link the files instead of copying them (same file system only); the
    manifest's hashes are checked whenever a job uses the model, so a source changed in place is refused.
    `progress(done, total)`: bytes copied so far."""
    _check_site(site)
    check_store_name(name)
    source = source.expanduser()
    store = models_dir(site)
    target = store / name
    if target.exists():
        raise ModelRefused(f"the store already holds {name!r}; remove it first (`klue leaderboard model remove`)")
    kind = check_model_files(source)
    store.mkdir(parents=True, exist_ok=True)
    files = [source] if kind == GGUF else list(_files(source))
    total = sum(f.stat().st_size for f in files)
    tmp = temp_dir_in(store, f".{name}.")
    try:
        stored = tmp / STORED_FILE[kind]
        if kind == GGUF:
            hashes = {stored.name: _put(source, stored, link, _Counter(total, progress))}
        else:
            counter = _Counter(total, progress)
            hashes = {f.relative_to(source).as_posix(): _put(f, stored / f.relative_to(source), link, counter)
                      for f in files}
        if check_model_files(stored) != kind:  # the copy, as it will be loaded
            raise ModelRefused("the source changed while it was copied", source)
        digest = hashes[stored.name][0] if kind == GGUF else _tree_digest({k: v[0] for k, v in hashes.items()})
        manifest = {"format": MANIFEST_FORMAT, "name": name, "kind": kind, "file": STORED_FILE[kind],
                    "sha256": digest, "bytes": sum(size for _, size in hashes.values()),
                    "added_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                    "source": str(source.resolve()), "linked": link,
                    "files": {rel: {"sha256": h, "bytes": size} for rel, (h, size) in sorted(hashes.items())}}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        try:
            os.rename(tmp, target)  # fails when a concurrent add of the same name got there first
        except OSError:
            raise ModelRefused(f"the store already holds {name!r}; remove it first") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _entry(target, manifest)


@dataclass
class _Counter:
    total: int
    report: Callable[[int, int], None] | None
    done: int = 0

    def add(self, n: int) -> None:
        self.done += n
        if self.report is not None:
            self.report(self.done, self.total)


def _put(source: Path, target: Path, link: bool, counter: _Counter) -> tuple[str, int]:
    """Copy (or hard-link) one file; its SHA-256 and size, of the bytes now in the store."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    if link:
        try:
            os.link(source.resolve(), target)
        except OSError as error:  # another file system (EXDEV), or one without hard links
            raise DataError(f"cannot hard-link it into the store ({error.strerror}); add it without --link to "
                            "copy it", source) from None
        with target.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                counter.add(len(chunk))
        return digest.hexdigest(), size
    with source.open("rb") as read, target.open("xb") as write:
        while chunk := read.read(_CHUNK):
            write.write(chunk)
            digest.update(chunk)
            size += len(chunk)
            counter.add(len(chunk))
    return digest.hexdigest(), size


def _tree_digest(hashes: dict[str, str]) -> str:
    """A directory's SHA-256: of its `sha256sum` listing, sorted by path (`cd DIR && find . -type f -printf
    '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum` gives the same)."""
    listing = "".join(f"{hashes[rel]}  {rel}\n" for rel in sorted(hashes, key=lambda r: r.encode()))
    return hashlib.sha256(listing.encode()).hexdigest()


def _read_manifest(entry: Path) -> dict[str, Any]:
    try:
        manifest: dict[str, Any] = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DataError(f"a store entry without a readable {MANIFEST} ({error}); remove it with `klue leaderboard "
                        "model remove`", entry) from None
    if manifest.get("format") != MANIFEST_FORMAT or manifest.get("kind") not in STORED_FILE:
        raise DataError(f"{MANIFEST} is not a klue model store manifest ({MANIFEST_FORMAT})", entry)
    return manifest


def _entry(entry: Path, manifest: dict[str, Any]) -> StoredModel:
    return StoredModel(entry.name, manifest["kind"], entry / STORED_FILE[manifest["kind"]], manifest["sha256"],
                       int(manifest["bytes"]), manifest["added_at"])


def list_models(site: Path) -> list[StoredModel]:
    """The store's entries, by name (a hidden directory is an add in progress, or one a kill interrupted)."""
    _check_site(site)
    store = models_dir(site)
    if not store.is_dir():
        return []
    return [_entry(entry, _read_manifest(entry)) for entry in sorted(store.iterdir())
            if entry.is_dir() and not entry.name.startswith(".")]


def _stored(site: Path, name: str) -> StoredModel:
    found = {m.name: m for m in list_models(site)}
    if name not in found:
        raise ModelRefused(f"no model named {name!r} in the site's store; {_store_has(found)}")
    return found[name]


def _store_has(found: dict[str, StoredModel] | list[StoredModel]) -> str:
    names = sorted(found) if isinstance(found, dict) else sorted(m.name for m in found)
    if not names:
        return "the store is empty (an admin adds models with `klue leaderboard model add SITE NAME PATH`)"
    return f"the store has: {', '.join(names)}"


def remove_model(site: Path, name: str) -> None:
    """Take NAME out of the store: renamed aside first (gone at once for every reader), then deleted."""
    entry = _stored(site, name).path.parent
    aside = entry.with_name(f".{name}.removed-{secrets.token_hex(4)}")
    os.rename(entry, aside)
    shutil.rmtree(aside)


def verify_stored(model: StoredModel) -> None:
    """ModelRefused when the stored bytes are not those `add_model` recorded (a hard-linked source changed
    in place, a disk error)."""
    manifest = _read_manifest(model.path.parent)
    present = {model.path.name} if model.path.is_file() else {
        f.relative_to(model.path).as_posix() for f in _files(model.path)} if model.path.is_dir() else set()
    if present != set(manifest["files"]):
        changed = sorted(present ^ set(manifest["files"]))
        raise ModelRefused(f"the stored model {model.name!r} changed since it was added (files added or removed: "
                           f"{', '.join(changed)}); add it again", model.path)
    for rel, expected in manifest["files"].items():
        file = model.path if model.kind == GGUF else model.path / rel
        digest = hashlib.sha256()
        with file.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        if digest.hexdigest() != expected["sha256"]:
            raise ModelRefused(f"the stored model {model.name!r} changed since it was added ({rel}: SHA-256 "
                               f"{digest.hexdigest()[:12]}..., recorded {expected['sha256'][:12]}...); add it again",
                               file)


# ---------------------------------------------------------------------------------------- submissions' specs


@dataclass(frozen=True)
class _Parsed:
    family: str
    prefix: str  # what goes before the model in a klue spec: "emb:", "hf:" or ""
    target: str | None  # the store name or hub id; None for classic and endpoints
    endpoint: bool


def _parse(spec: str) -> _Parsed:
    """Which family a spec is (klue.families' own answer) and what it names."""
    from klue.embed.spec import LOCAL_KIND
    from klue.embed.spec import parse_spec as parse_embedding
    from klue.families import family_of
    from klue.llm.spec import kind_of

    family = family_of(spec).name
    if family == "classic":
        return _Parsed(family, "", None, False)
    if family == "embedding":
        body = spec.removeprefix("emb:")
        if not body:
            raise ModelRefused(f"model spec {spec!r}: emb: needs a model name")
        if parse_embedding(spec).kind != LOCAL_KIND:
            return _Parsed(family, "", None, True)
        return _Parsed(family, "emb:", body, False)
    if family == "llm":
        kind = kind_of(spec)
        assert kind is not None  # family_of said llm
        if kind.prefix != "hf:":  # every other backend is a server elsewhere
            return _Parsed(family, "", None, True)
        return _Parsed(family, kind.prefix, spec.removeprefix(kind.prefix), False)
    return _Parsed(family, "", spec, False)


def _looks_like_path(target: str) -> bool:
    return (target.startswith(("/", ".", "~")) or "\\" in target or "//" in target or ".." in target
            or re.match(r"[A-Za-z]:", target) is not None or target.count("/") > 1)


def admit(site: Path, spec: str, *, families: Sequence[str], has_private_part: bool,
          allow_endpoints: bool) -> AdmittedModel:
    """`spec` checked against the site's policy, or ModelRefused with the reason; no network. A path on the
    server's disk is refused (a participant names models in the store, or hub ids); so is a family the site
    does not open, and an endpoint (`openai:`, `emb:openai:`) on a site with a private part unless
    `allow_endpoints`: the endpoint would see the hidden inputs."""
    spec = spec.strip()
    if not spec:
        raise ModelRefused("no model spec given")
    unknown = sorted(set(families) - set(FAMILY_NAMES))
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {FAMILY_NAMES}")
    try:
        parsed = _parse(spec)
    except ModelRefused:
        raise
    except DataError as error:
        raise ModelRefused(error.problems) from None
    shown = redact_text(spec)  # an endpoint's URL may hold user:password@
    if parsed.target is not None and _looks_like_path(parsed.target):
        raise ModelRefused(f"model spec {shown!r} names a path on the server's disk, which a submission may not: name "
                           f"a model in the site's store ({_store_has(list_models(site))}) or a hub id (org/name)")
    if parsed.family not in families:
        opened = ", ".join(f for f in FAMILY_NAMES if f in families) or "none"
        raise ModelRefused(f"model spec {shown!r} is of the {parsed.family} family, which this site does not evaluate "
                           f"(open to model submissions: {opened})")
    if parsed.endpoint:
        return _admit_endpoint(spec, parsed, has_private_part, allow_endpoints)
    if parsed.target is None:
        return AdmittedModel(spec, parsed.family, "builtin", None, None)
    return _admit_named(site, spec, parsed)


def _admit_endpoint(spec: str, parsed: _Parsed, has_private_part: bool, allow_endpoints: bool) -> AdmittedModel:
    from klue.families import check_specs

    if has_private_part and not allow_endpoints:
        raise ModelRefused(f"model spec {redact_text(spec)!r} is a server elsewhere (an endpoint): the endpoint would see "
                           "the hidden inputs it is sent, so a site with a private part refuses endpoints "
                           "(the site's configuration may allow them: allow_endpoints: true)")
    try:
        check_specs([spec])  # the backend's own syntax check (no request is made)
    except DataError as error:
        raise ModelRefused(error.problems) from None
    return AdmittedModel(spec, parsed.family, "endpoint", None, None)


def _admit_named(site: Path, spec: str, parsed: _Parsed) -> AdmittedModel:
    target = parsed.target
    assert target is not None
    if _HUB_ID.fullmatch(target) and ".." not in target:
        if target.lower().endswith(".gguf"):
            raise ModelRefused(f"model spec {spec!r}: a GGUF file is taken from the site's store only (an admin adds "
                               "it with `klue leaderboard model add`), not from the hub")
        return AdmittedModel(spec, parsed.family, "hub", None, target)
    if not _STORE_NAME.fullmatch(target):
        raise ModelRefused(f"model spec {spec!r}: {target!r} is neither a store name nor a hub id (org/name)")
    stored = {m.name: m for m in list_models(site)}
    if target not in stored:
        raise ModelRefused(f"model spec {spec!r}: no model named {target!r} in the site's store; "
                           f"{_store_has(stored)}")
    _fits(spec, parsed.family, stored[target])
    return AdmittedModel(spec, parsed.family, "store", target, None)


def _fits(spec: str, family: str, model: StoredModel) -> None:
    """A GGUF runs only as a prompted LM (`hf:`); encoders and embedding models need a directory."""
    if model.kind == GGUF and family != "llm":
        raise ModelRefused(f"model spec {spec!r}: {model.name!r} is a GGUF file, which only the LLM family runs "
                           f"(hf:{model.name}); the {family} family needs a Hugging Face directory")


def materialise(site: Path, admitted: AdmittedModel, *, endpoint: str | None = None, verify: bool = True) -> str:
    """The klue model spec the benchmark cell runs on this server: the stored copy's path behind the family's
    prefix (`emb:/SITE/models/e5-small/model`, `hf:/SITE/models/smollm2.gguf/model.gguf`), a hub model fetched
    into SITE/hub-cache (safetensors, JSON and tokenizer files only, then `check_model_files`), `classic` and
    endpoints as given. `endpoint`: the hub's URL (default huggingface_hub's, i.e. HF_ENDPOINT); `verify`: check
    a stored model's SHA-256 against its manifest first."""
    prefix = _parse(admitted.spec).prefix
    if admitted.source in ("builtin", "endpoint"):
        return admitted.spec
    if admitted.source == "store":
        assert admitted.store_name is not None
        model = _stored(site, admitted.store_name)
        _fits(admitted.spec, admitted.family, model)
        if verify:
            verify_stored(model)
        return f"{prefix}{model.path}"
    if admitted.source == "hub":
        assert admitted.hub_id is not None
        return f"{prefix}{fetch_hub_model(site, admitted.hub_id, endpoint=endpoint)}"
    raise ValueError(f"unknown source {admitted.source!r}")


def fetch_hub_model(site: Path, hub_id: str, *, endpoint: str | None = None) -> Path:
    """The hub model `hub_id` in SITE/hub-cache (fetched now unless already there), checked like a stored one."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        folder = snapshot_download(hub_id, cache_dir=str(site.resolve() / HUB_CACHE_DIR), endpoint=endpoint,
                                   allow_patterns=list(HUB_FILES))
    except (RepositoryNotFoundError, GatedRepoError, RevisionNotFoundError) as error:
        raise ModelRefused(f"{hub_id}: the hub has no such public model ({type(error).__name__})") from None
    except LocalEntryNotFoundError as error:
        raise UnreachableError(f"{hub_id}: the hub cannot be reached and the model is not in the site's cache "
                               f"({' '.join(str(error).split())[:200]})") from None
    path = Path(folder)
    try:
        if check_model_files(path) != HF_DIR:
            raise ModelRefused("not a model directory", path)
    except ModelRefused as error:
        raise ModelRefused(f"{hub_id} (from the hub): {error.summary(name_errors=False)}") from None
    return path
