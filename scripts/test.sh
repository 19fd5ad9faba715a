#!/usr/bin/env bash
# Set up .venv/ and run the whole test suite (the README's test command).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export OMP_WAIT_POLICY=PASSIVE
exec .venv/bin/python -m pytest -q -n 2 "$@"
