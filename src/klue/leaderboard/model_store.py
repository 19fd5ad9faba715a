"""TEMPORARY STAND-IN for the site's model store (issue 39): the `store` helper builds the real module (checks
on the way in, hub fetches, `klue leaderboard model add|list|remove`); the lead replaces this file with theirs
at the merge. It implements only the interface of issue39-split.md that model submissions code against, with
the least checking that keeps the model-submission tests honest (no pickle files, no remote code, no path on
the server's disk, endpoints refused on a site with a private part). No Django here.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from klue.errors import DataError

FAMILY_NAMES = ("classic", "encoder", "llm", "embedding")
MODELS_DIR = "models"
MANIFEST = "manifest.json"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
ENDPOINT_PREFIXES = ("openai:", "emb:openai:")


class ModelRefused(DataError):
    """Why a model is refused (the participant or the admin reads it)."""


@dataclass(frozen=True)
class StoredModel:
    name: str
    kind: str  # "hf-dir" | "gguf"
    path: Path
    sha256: str
    bytes: int
    added_at: str


@dataclass(frozen=True)
class AdmittedModel:
    spec: str
    family: str
    source: str  # "builtin" | "store" | "hub" | "endpoint"
    store_name: str | None
    hub_id: str | None


def check_model_files(path: Path) -> str:
    if path.is_file() and path.suffix == ".gguf":
        return "gguf"
    if not path.is_dir():
        raise ModelRefused(f"{path.name}: neither a GGUF file nor a model directory")
    names = [p.name for p in path.rglob("*") if p.is_file()]
    if any(n.endswith(PICKLE_SUFFIXES) for n in names):
        raise ModelRefused(f"{path.name}: holds pickle files, which run code when loaded; give safetensors")
    if not any(n.endswith(".safetensors") for n in names):
        raise ModelRefused(f"{path.name}: no safetensors weights")
    config = path / "config.json"
    if config.is_file() and "auto_map" in json.loads(config.read_text(encoding="utf-8")):
        raise ModelRefused(f"{path.name}: asks for remote code (auto_map in config.json)")
    return "hf-dir"


def _digest(path: Path) -> tuple[str, int]:
    sha, size = hashlib.sha256(), 0
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        sha.update(file.name.encode())
        data = file.read_bytes()
        sha.update(data)
        size += len(data)
    return sha.hexdigest(), size


def add_model(site: Path, name: str, source: Path) -> StoredModel:
    if "/" in name or name.startswith(".") or not name:
        raise ModelRefused(f"{name!r}: a store name has no '/' and no leading '.'")
    kind = check_model_files(source)
    entry = site / MODELS_DIR / name
    if entry.exists():
        raise ModelRefused(f"the store holds {name!r} already")
    entry.mkdir(parents=True)
    target = entry / name if kind == "gguf" else entry / "model"
    if kind == "gguf":
        shutil.copyfile(source, target)
    else:
        shutil.copytree(source, target)
    sha, size = _digest(target)
    stored = StoredModel(name, kind, target.resolve(), sha, size, dt.datetime.now(dt.timezone.utc).isoformat())
    (entry / MANIFEST).write_text(json.dumps({**vars(stored), "path": str(stored.path)}), encoding="utf-8")
    return stored


def list_models(site: Path) -> list[StoredModel]:
    out = []
    for manifest in sorted((site / MODELS_DIR).glob(f"*/{MANIFEST}")):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        out.append(StoredModel(**{**data, "path": Path(data["path"])}))
    return out


def remove_model(site: Path, name: str) -> None:
    shutil.rmtree(site / MODELS_DIR / name)


def _stored(site: Path, name: str) -> StoredModel:
    found = next((m for m in list_models(site) if m.name == name), None)
    if found is None:
        raise ModelRefused(f"the site's model store holds no model {name!r}")
    return found


def admit(site: Path, spec: str, *, families: Sequence[str], has_private_part: bool,
          allow_endpoints: bool) -> AdmittedModel:
    spec = spec.strip()
    if spec.startswith(ENDPOINT_PREFIXES):
        family = "embedding" if spec.startswith("emb:") else "llm"
        if has_private_part and not allow_endpoints:
            raise ModelRefused(f"{spec.split('@')[0]}: endpoints are refused on this site: the endpoint would see "
                               "the hidden inputs of the private part")
        admitted = AdmittedModel(spec, family, "endpoint", None, None)
    elif spec == "classic":
        admitted = AdmittedModel(spec, "classic", "builtin", None, None)
    else:
        family, name = ("embedding", spec[4:]) if spec.startswith("emb:") else (
            ("llm", spec[3:]) if spec.startswith("hf:") else ("encoder", spec))
        if name.startswith(("/", "~", ".")) or "\\" in name:
            raise ModelRefused(f"{spec}: a path on the server's disk is refused; name a model of the site's store")
        if "/" in name:
            raise ModelRefused(f"{spec}: hub ids are not served by this stand-in store")
        _stored(site, name)
        admitted = AdmittedModel(spec, family, "store", name, None)
    if admitted.family not in families:
        raise ModelRefused(f"{spec}: the {admitted.family} family is not open to model submissions on this site "
                           f"(open: {', '.join(families)})")
    return admitted


def materialise(site: Path, admitted: AdmittedModel) -> str:
    if admitted.source in ("builtin", "endpoint"):
        return admitted.spec
    assert admitted.store_name is not None
    path = _stored(site, admitted.store_name).path
    prefix = {"embedding": "emb:", "llm": "hf:", "encoder": ""}[admitted.family]
    return f"{prefix}{path}"
