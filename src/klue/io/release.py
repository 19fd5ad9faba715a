"""The identities of the official KLUE files: a v1.1 file by its git blob id, a v1 tarball by sha256."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FileRole = Literal["train", "dev", "resource"]


@dataclass(frozen=True)
class OfficialFile:
    """One file of the official KLUE v1.1 release, by its path under `klue_benchmark/`."""

    role: FileRole
    path: str  # e.g. "klue-nli-v1.1/klue-nli-v1.1_dev.json"
    git_blob: str  # sha1 of b"blob <len>\0" + bytes: the file's identity upstream
    size: int | None = None  # bytes, where known


@dataclass(frozen=True)
class ArchiveFile:
    """A v1 tarball (the one the Hugging Face `klue` builder used); it unpacks to `<name>-v1/`."""

    url: str
    sha256: str
    size: int
