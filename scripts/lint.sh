#!/usr/bin/env bash
# The gates every change passes before the tests (.ci/run): ruff on src/ and tests/, mypy on src/klue
# (configured in pyproject.toml, [tool.mypy]).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check src tests
.venv/bin/mypy
