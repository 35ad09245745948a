#!/usr/bin/env bash
# One device call: the catalog's records on the H200, as issue 6 asks for them:
#   kernelcraft eval tasks/<t> <promoted solutions> --with-baseline --device cuda --with-compile
#     --json results/h200/<t>.json
# for each task given (default: every catalog task), copied to $OUT so they come back.
# Only the promoted solutions listed below are evaluated (plus the baseline and torch.compile
# rows), to spend as little device time as possible; edit PROMOTED when a task promotes another.
# Tasks run one after another under a per-task limit (TASK_S, default 240 s) and a total deadline
# (TOTAL_S, default 570 s, under the device tool's 600 s per call): a task that cannot start with
# at least 60 s left is skipped and named at the end, so every finished record still comes back.
# BUDGET_MS (default 200, as scripts/h200_catalog2.sh) is the timing budget per timed function and
# workload (the contracts say 500): fewer repetitions, less device time per call.
# Usage (device machine, repo root): bash scripts/h200_catalog.sh [task ...]
# Needs the cp312 wheels in .whl/ (AGENTS.md), like scripts/h200_sweep.sh.
set -u
export PYTHONUNBUFFERED=1
start=$(date +%s)
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
OUT=${OUT:-/tmp/out}
TASK_S=${TASK_S:-240}
TOTAL_S=${TOTAL_S:-570}
mkdir -p "$OUT" results/h200
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"

declare -A PROMOTED=(
  [rmsnorm]="triton_dps"
  [silu_mul]="triton_tiled.py"
  [softmax]="triton_online.py"
  [fused_add_rmsnorm]="triton_rowwise.py"
  [layernorm]="triton_dispatch.py"
  [gelu_tanh_mul]="triton_tiled.py"
  [rope]="triton_tokens.py"
  [fp8_rowwise_quant]="triton_hwcvt.py"
)
ALL=(fused_add_rmsnorm layernorm gelu_tanh_mul rope fp8_rowwise_quant rmsnorm silu_mul softmax)

tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=("${ALL[@]}")
extra=()
extra+=(--budget-ms "${BUDGET_MS:-200}")
skipped=()
for t in "${tasks[@]}"; do
  if [ -z "${PROMOTED[$t]+x}" ]; then
    echo "=== $t: not a catalog task (known: ${ALL[*]})"; skipped+=("$t"); continue
  fi
  left=$(( TOTAL_S - ($(date +%s) - start) ))
  if [ "$left" -lt 60 ]; then
    skipped+=("$t"); continue
  fi
  limit=$(( left < TASK_S ? left : TASK_S ))
  sols=()
  for s in ${PROMOTED[$t]}; do sols+=("tasks/$t/solutions/$s"); done
  echo "=== $t (limit ${limit} s, $(( $(date +%s) - start )) s elapsed): ${sols[*]}"
  timeout "$limit" python3 -m kernelcraft eval "tasks/$t" "${sols[@]}" --with-baseline --device cuda --with-compile \
    "${extra[@]}" --json "results/h200/$t.json" 2>&1 | tee "$OUT/$t.log"
  cp "results/h200/$t.json" "$OUT/" 2>/dev/null
done
echo "=== done in $(( $(date +%s) - start )) s${skipped:+; not run: ${skipped[*]}}"

# at most 8 files come back from $OUT: one archive
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
