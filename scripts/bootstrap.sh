#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment at .venv/ with `klue` and every extra installed.
# Re-running is cheap: the install is skipped while pyproject.toml is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=.venv/.klue-installed
want=$(sha1sum pyproject.toml scripts/bootstrap.sh | sha1sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    .venv/bin/python -m pip install -q torch            # a CUDA build, from the index
  else
    .venv/bin/python -m pip install -q torch==2.13.0    # the CPU wheel; any other version pulls CUDA
  fi
  .venv/bin/python -m pip install -q -e '.[all]'
  echo "$want" > "$stamp"
fi
