#!/usr/bin/env bash
# One device call: the whole build-check-time sweep on the H200, records written where the issue
# says (results/h200/<task>.json) and copied to $OUT so they come back.
# Usage (device machine, repo root): bash scripts/h200_sweep.sh [task ...]
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" results/h200
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(rmsnorm silu_mul softmax)
for t in "${tasks[@]}"; do
  echo "=== $t"
  timeout 560 python3 -m kernelcraft eval "tasks/$t" --device cuda --with-compile --json "results/h200/$t.json" 2>&1 | tee "$OUT/$t.log"
  cp "results/h200/$t.json" "$OUT/" 2>/dev/null
done

# at most 8 files come back from $OUT: one archive
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
