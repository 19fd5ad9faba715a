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


@pytest.mark.slow
def test_longest_files_come_first_costliest_first(tmp_path: Path) -> None:
    """The collection order the two workers share out: files holding a `longest` test first, the one with the
    largest `seconds` first, then those without, then the rest as collected."""
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    files = {"test_a_quick.py": "def test_quick():\n    pass\n",
             "test_b_long.py": "import pytest\n\n\n@pytest.mark.longest\ndef test_long():\n    pass\n",
             "test_c_costly.py": "import pytest\n\n\n@pytest.mark.longest(seconds=90)\ndef test_costly():\n    pass\n",
             "test_d_costlier.py": ("import pytest\n\npytestmark = pytest.mark.longest(seconds=5)\n\n\ndef test_one():\n"
                                    "    pass\n\n\n@pytest.mark.longest(seconds=120)\ndef test_two():\n    pass\n")}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    ini = "[pytest]\nmarkers =\n    slow: slow\n    longest: longest\naddopts = --strict-markers\n"
    (tmp_path / "pytest.ini").write_text(ini, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           "--collect-only", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert collected == ["test_d_costlier.py::test_one", "test_d_costlier.py::test_two", "test_c_costly.py::test_costly",
                         "test_b_long.py::test_long", "test_a_quick.py::test_quick"], done.stdout
