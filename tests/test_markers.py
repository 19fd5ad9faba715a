"""The suite's markers: a `longest` test is always a `slow` one (tests/conftest.py), so `-m "not slow"`
(`scripts/test.sh --fast`) never runs one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SAMPLE = '''
import pytest


@pytest.mark.longest
def test_long():
    pass


@pytest.mark.longest
@pytest.mark.slow
def test_long_and_marked():
    pass


@pytest.mark.slow
def test_slow():
    pass


def test_quick():
    pass
'''


@pytest.mark.slow
def test_not_slow_deselects_every_longest_test(tmp_path: Path) -> None:
    """The suite's own conftest, in a directory with four tests: `-m "not slow"` keeps only the quick one."""
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    ini = "[pytest]\nmarkers =\n    slow: slow\n    longest: longest\naddopts = --strict-markers\n"
    (tmp_path / "pytest.ini").write_text(ini, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           "-m", "not slow", "--collect-only", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert collected == ["test_sample.py::test_quick"], done.stdout
    assert "3 deselected" in done.stdout
