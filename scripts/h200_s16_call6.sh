#!/usr/bin/env bash
# Session 16, device call 6 (~180 s). carry: [".whl"]   command: bash scripts/h200_s16_call6.sh
# Issue 19: the blocker made once per device and process (it was made per rotation: a new @triton.jit each workload,
# in the judge and the runner). The harness's turnaround and throughput with KERNELCRAFT_TIMING_BLOCK=1 beside call
# 5's unblocked kc-timing/6 run (17.9 candidates/GPU-min; cuda cached 1.71 s).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
KERNELCRAFT_TIMING_BLOCK=1 timeout ${HARNESS_S:-170} python3 benchmarks/harness.py --device cuda --parts turnaround,throughput \
  --out "$OUT/harness_block.json" > "$OUT/harness_block.log" 2>&1
echo "harness (blocked): rc=$? $(( $(date +%s) - t0 ))s"
grep -E "turnaround|per GPU-minute|cand_" "$OUT/harness_block.log" | cut -c1-300
bash scripts/pack_out.sh
