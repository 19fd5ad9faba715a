"""What every results file records about its inputs and the software that made it: the data files read
(path, git blob id, example count, use), library versions, the git revision, the time."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from klue.io.hashing import git_blob_sha1


@dataclass(frozen=True)
class DataSource:
    """A file a run read: its path, git blob id and how many examples it gave."""

    path: str
    git_blob: str
    n_examples: int
    used_as: str  # "train", "eval", "selection", or e.g. "train (80% by premise hash)"


def data_source(path: Path, n_examples: int, used_as: str, root: Path | None = None) -> DataSource:
    """A provenance entry: the path (relative to its root when given), git blob id and count."""
    shown = str(path.relative_to(root)) if root is not None and path.is_relative_to(root) else str(path)
    return DataSource(shown, git_blob_sha1(path), n_examples, used_as)


_LIBRARIES = ("klue", "numpy", "scipy", "scikit-learn", "torch", "transformers", "accelerate",
              "tokenizers", "python-crfsuite", "kiwipiepy")


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
