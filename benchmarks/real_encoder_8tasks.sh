#!/usr/bin/env bash
# All 8 KLUE tasks fine-tuned on a real pretrained encoder (multilingual-e5-small from ../shared/tools/real_models.py)
# with `klue benchmark`, one cell per task, sized for 2 CPU cores: the paper recipe per task, except a budget of
# optimizer steps per task (max_steps, below; the schedule spans them; "-" keeps the recipe's epochs), one evaluation after the last step
# (evals_per_epoch=0: no checkpoint selection) and no resumable checkpoints (save_checkpoints=false).
# Local protocols (not official): each task's default local protocol, STS with KorSTS train added.
# STS keeps its recipe's 4 epochs (772 steps): shorter budgets end inside its loss plateau
# (benchmarks/history/fine-tuning-real.md, "Why STS and NLI stayed low").
# A failed cell does not stop the others (WoS, the most memory-hungry, runs last). Then one report. Usage: bash benchmarks/real_encoder_8tasks.sh OUT [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: real_encoder_8tasks.sh OUT [SEEDS]}
seeds=${2:-1}
model=$(.venv/bin/python ../shared/tools/real_models.py | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["me5_small"])')
export KLUE_DATA_DIR=${KLUE_DATA_DIR:-$(cd ../shared/data/klue && pwd)}
export KLUE_EXTRA_DATA_DIR=${KLUE_EXTRA_DATA_DIR:-$(cd ../shared/data && pwd)}
export OMP_WAIT_POLICY=PASSIVE
# task protocol max_steps
while read -r task protocol steps; do
  budget=()
  if [ "$steps" != "-" ]; then budget=(--override max_steps="$steps"); fi
  .venv/bin/klue benchmark --model "$model" --out "$out" --tasks "$task" --seeds "$seeds" --protocol "$protocol" \
    "${budget[@]}" --override evals_per_epoch=0 --override save_checkpoints=false </dev/null \
    || echo "cell $task failed (exit $?): the other tasks go on; the report shows it" >&2
done <<'TASKS'
ynat local:ynat-resplit 190
nli local:dev-80-20 225
re local:re-sample-80-20 160
dp local:dev-80-20 150
mrc local:korquad-80-20 60
ner local:ner-train5000 150
sts local:dev-80-20+korsts -
wos local:wos-dev-sample10 40
TASKS
.venv/bin/klue report "$out" --format md -o "$out/report.md"
.venv/bin/klue report "$out" -o "$out/report.html"
