#!/usr/bin/env bash
# The README's main command: set up .venv/ and run `klue quickstart` (CPU baselines on every task, the
# leaderboard, the HTML report). Data: KLUE_DATA_DIR when set; else ../shared/data when this checkout sits
# beside one (the project's development machines); else klue's cache, downloading the official files.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
if [ -z "${KLUE_DATA_DIR:-}" ] && [ -d ../shared/data/klue ]; then
  export KLUE_DATA_DIR="$(cd ../shared/data/klue && pwd)"
  export KLUE_EXTRA_DATA_DIR="${KLUE_EXTRA_DATA_DIR:-$(cd ../shared/data && pwd)}"
fi
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
exec .venv/bin/klue quickstart "$@"
