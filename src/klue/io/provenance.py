"""What every results file records about its inputs and the software that made it: the data files read
(path, git blob id, sha256, example count, use), library versions, the git revision, the time.

The git blob id is the identity the report compares with the official files; the sha256 is the one other
tools print, read in the same pass over the file. A `datasets` directory has no git blob id; its identity
is a sha256 over its files (`tree_sha256`), recorded in both places. A source that is no local file (a
hub split) has no sha256 (None).
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from klue.io.hashing import sha256_file

CHUNK_SIZE = 1 << 20


@dataclass(frozen=True)
class DataSource:
    """A file a run read: its path, git blob id, sha256 and how many examples it gave. `sha256` is None
    where none is known (a hub split; results files written before the field existed)."""

    path: str
    git_blob: str
    n_examples: int
    used_as: str  # "train", "eval", "selection", or e.g. "train (80% by premise hash)"
    sha256: str | None = None


def data_source(path: Path, n_examples: int, used_as: str, root: Path | None = None) -> DataSource:
    """A provenance entry: the path (relative to its root when given), git blob id, sha256 and count."""
    shown = str(path.relative_to(root)) if root is not None and path.is_relative_to(root) else str(path)
    identity = identify(path)
    return DataSource(shown, identity.git_blob, n_examples, used_as, identity.sha256)


def tree_sha256(directory: Path) -> str:
    """sha256 over `<relative path>\\0<sha256 of the file>\\n` for every file under `directory`, in path
    order: the identity of a directory of files (a `datasets` save_to_disk copy)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(directory).as_posix()}\0{sha256_file(path)}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class FileIdentity:
    """A data file's (or directory's) identity: its git blob id (for a directory: its tree sha256) and
    its sha256."""

    git_blob: str
    sha256: str


def file_identity(path: Path) -> FileIdentity:
    """A file's git blob id and sha256, read in one pass (the blob id's header needs only the size)."""
    blob = hashlib.sha1(b"blob " + str(path.stat().st_size).encode() + b"\0")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_SIZE):
            blob.update(chunk)
            digest.update(chunk)
    return FileIdentity(blob.hexdigest(), digest.hexdigest())


def identify(path: Path) -> FileIdentity:
    """A file's identity (`file_identity`), or a directory's (its tree sha256, in both places)."""
    if path.is_dir():
        tree = tree_sha256(path)
        return FileIdentity(tree, tree)
    return file_identity(path)


def named_source(shown: str, identity: FileIdentity, n_examples: int, used_as: str) -> DataSource:
    """A provenance entry for a file the user named (`shown` as given: a path or `DIR:split`)."""
    return DataSource(shown, identity.git_blob, n_examples, used_as, identity.sha256)


_LIBRARIES = ("klue", "numpy", "scipy", "scikit-learn", "torch", "transformers", "accelerate",
              "tokenizers", "python-crfsuite", "kiwipiepy", "datasets", "pyarrow", "sentence-transformers")


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries that can change a score (absent ones are left out)."""
    versions = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_revision(start: Path | None = None) -> str | None:
    """The klue checkout's commit, with `-dirty` when it has uncommitted changes; None outside git."""
    where = start or Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                             timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{rev}-dirty" if dirty else rev


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
