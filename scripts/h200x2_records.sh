#!/usr/bin/env bash
# One call on a 2-GPU H200 machine: task records, then (time permitting) benchmarks.
#   1. for each "task:file,file,..." argument (files relative to tasks/<task>/):
#        kernelcraft eval tasks/<task> <files> --with-baseline --device cuda --with-compile
#          --budget-ms 200 --json results/h200/<task>.json          (the pool spreads rows over both GPUs)
#   2. STEPS (default "scale harness"): benchmarks/scale.py (results/h200x2/scale.json) and
#      benchmarks/harness.py --parts turnaround,throughput on GPU 0 (merged into results/h200/harness.json)
# Every output is copied to $OUT and packed. Usage:
#   bash scripts/h200x2_records.sh fp8_rowwise_quant:solutions/triton_hwcvt.py,candidates/triton_rowwise.py ...
set -u
export PYTHONUNBUFFERED=1
start=$(date +%s)
OUT=${OUT:-/tmp/out}
DEADLINE=${DEADLINE:-575}
mkdir -p "$OUT" results/h200 results/h200x2
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
RESERVE=${RESERVE:-0}  # seconds kept for the STEPS
for spec in "$@"; do
  t=${spec%%:*}; files=()
  IFS=, read -ra rel <<< "${spec#*:}"
  for f in "${rel[@]}"; do files+=("tasks/$t/$f"); done
  l=$(( $(left) - RESERVE - 5 )); [ "$l" -gt 180 ] && l=180; [ "$l" -lt 40 ] && { echo "=== not run: $t"; continue; }
  echo "=== $t (limit $l s, $(( $(date +%s) - start )) s elapsed): ${files[*]}"
  timeout "$l" python3 -m kernelcraft eval "tasks/$t" "${files[@]}" --with-baseline --device cuda --with-compile \
    --budget-ms "${BUDGET_MS:-200}" --timeout "${EVAL_TIMEOUT:-60}" --json "results/h200/$t.json" 2>&1 | grep -v Warning | tail -40 | tee "$OUT/$t.log"
  cp "results/h200/$t.json" "$OUT/" 2>/dev/null
done
for step in ${STEPS:-scale harness}; do
  l=$(( $(left) - 5 ))
  echo "=== $step (limit $l s, $(( $(date +%s) - start )) s elapsed)"
  [ "$l" -lt 60 ] && { echo "=== not run: $step"; continue; }
  case $step in
    scale) timeout "$l" python3 benchmarks/scale.py --device cuda --workers 1,2 ${SCALE_ARGS:-} --out results/h200x2/scale.json 2>&1 \
             | grep -v Warning | tee "$OUT/scale.log"; cp results/h200x2/scale.json "$OUT/" 2>/dev/null ;;
    harness) CUDA_VISIBLE_DEVICES=0 timeout "$l" python3 benchmarks/harness.py --device cuda --parts turnaround,throughput \
             --out results/h200/harness.json 2>&1 | grep -v Warning | tee "$OUT/harness.log"
             cp results/h200/harness.json "$OUT/" 2>/dev/null ;;
  esac
done
echo "=== done in $(( $(date +%s) - start )) s"
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
