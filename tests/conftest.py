"""Shared fixtures: where the real data is, and skips with a reason when it is not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _klue_dir() -> Path | None:
    env = os.environ.get("KLUE_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data" / "klue")
    return next((p for p in candidates if p.is_dir()), None)


def _shared_dir() -> Path | None:
    """`../shared/data`: the official files plus other real Korean sets (see its README)."""
    klue_dir = _klue_dir()
    candidates = [klue_dir.parent] if klue_dir else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    return next((p for p in candidates if (p / "korean").is_dir() or (p / "klue-partial").is_dir()), None)


@pytest.fixture(scope="session")
def klue_data_dir() -> Path:
    """The official KLUE v1.1 files (KLUE_DATA_DIR, else ../shared/data/klue)."""
    path = _klue_dir()
    if path is None:
        pytest.skip("real KLUE data absent: set KLUE_DATA_DIR to a directory in the official layout")
    return path


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """../shared/data: klue-partial, klue-derived, korean, scoring-cases."""
    path = _shared_dir()
    if path is None:
        pytest.skip("../shared/data absent: the real Korean sets beside the official files are not here")
    return path
