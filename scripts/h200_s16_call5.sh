#!/usr/bin/env bash
# Session 16, device call 5 (~200 s). carry: [".whl"]   command: bash scripts/h200_s16_call5.sh
# Issue 19: kc-timing/6 (the judge's reference row brief: min_reps repetitions, outside the stopping rule and the wall
# bound; calls 3-4 found every rotation of the throughput run ending at its wall bound, 3 x 50 ms x 3 rows a workload).
# The harness's turnaround and throughput, unblocked (the default), to set beside call 4's 13.9 candidates/GPU-min.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_timing_block.py tests/test_gpu_measure.py > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: rc=$? $(( $(date +%s) - t0 ))s"; tail -3 "$OUT/gpu_tests.log"
t0=$(date +%s)
timeout ${HARNESS_S:-200} python3 benchmarks/harness.py --device cuda --parts turnaround,throughput \
  --out "$OUT/harness.json" > "$OUT/harness.log" 2>&1
echo "harness: rc=$? $(( $(date +%s) - t0 ))s"
grep -E "turnaround|per GPU-minute|cand_" "$OUT/harness.log" | cut -c1-300
bash scripts/pack_out.sh
