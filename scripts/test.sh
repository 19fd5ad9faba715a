#!/usr/bin/env bash
# Set up .venv/ and run the whole test suite (the README's test command); `--fast` first: the tests not
# marked `slow` only (the edit-test loop; a `longest` test is always `slow`, tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export OMP_WAIT_POLICY=PASSIVE
# Byte code is cached (the __pycache__ folders are gitignored): where PYTHONDONTWRITEBYTECODE is set, as in this
# project's sandbox, each xdist worker rewrote the asserts of every test module again (about 10 CPU s a worker)
# and each of the suite's ~200 klue subprocesses compiled klue's modules again (about 0.3 CPU s each).
unset PYTHONDONTWRITEBYTECODE
fast=()
if [ "${1:-}" = "--fast" ]; then
  shift
  fast=(-m "not slow")
fi
# worksteal: an idle worker takes tests queued for the other; with the files that hold `longest` tests
# collected first, costliest first (tests/conftest.py), the two workers end together. Here, 2026-12-07,
# idle: 426 s at f27bc8c (the README's Testing section); --fast: 104 s.
exec .venv/bin/python -m pytest -q -n 2 --dist worksteal "${fast[@]}" "$@"
