"""File identities: the git blob id upstream uses, and sha256 for the v1 tarballs."""

from __future__ import annotations

import hashlib
from pathlib import Path


def git_blob_sha1_bytes(data: bytes) -> str:
    return hashlib.sha1(b"blob " + str(len(data)).encode() + b"\0" + data).hexdigest()


def git_blob_sha1(path: Path, chunk_size: int = 1 << 20) -> str:
    """sha1 over b"blob <size>\\0" + content, streamed: the id `git hash-object` gives."""
    digest = hashlib.sha1(b"blob " + str(path.stat().st_size).encode() + b"\0")
    with path.open("rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()
