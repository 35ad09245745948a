#!/usr/bin/env bash
# Catalog II on the H200 (issue 7): one eval per task, --with-compile, records in results/h200/<task>.json
# (copied to $OUT). Each task keeps one Triton solution in solutions/ (wrong/ is not run), so only it
# runs next to the baseline and torch.compile rows, timed with a 200 ms budget per function; each task has its own time limit so one slow task cannot eat the call.
# Usage (device machine, repo root): bash scripts/h200_catalog2.sh [task ...]
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" results/h200
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
# seconds per task (eval of baseline + solution + torch.compile, holdouts and rechecks included)
declare -A LIMIT=([cross_entropy]=120 [topk]=150 [kmeans_assign]=120 [balanced_kmeans_step]=180)
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(cross_entropy topk kmeans_assign balanced_kmeans_step)
for t in "${tasks[@]}"; do
  echo "=== $t"
  # no SOLUTION named: the baseline (trusted row) and each task's one solution in solutions/
  timeout "${LIMIT[$t]}" python3 -m kernelcraft eval "tasks/$t" --device cuda --with-compile --budget-ms 200 \
    --json "results/h200/$t.json" 2>&1 | tee "$OUT/$t.log"
  cp "results/h200/$t.json" "$OUT/" 2>/dev/null
done

# at most 8 files come back from $OUT: one archive
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
