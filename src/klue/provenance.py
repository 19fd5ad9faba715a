"""What every results file records about the software that made it."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

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
