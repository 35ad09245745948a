#!/usr/bin/env bash
# Session 16, device call 3 (~340 s). carry: [".whl"]   command: bash scripts/h200_s16_call3.sh
# Issue 19: the blocking kernel's GPU tests (a failed capture now gives the generator back: call 1's test run died on
# torch.randn after the eager-sync test), scripts/timing_block.py (blocker vs none: idle, GIL thread, busy cores),
# then the harness's turnaround and throughput with KERNELCRAFT_TIMING_BLOCK=1.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_timing_block.py > "$OUT/test_timing_block.log" 2>&1
trc=$?; echo "gpu tests: rc=$trc $(( $(date +%s) - t0 ))s"; tail -5 "$OUT/test_timing_block.log"
t0=$(date +%s)
timeout 150 python3 scripts/timing_block.py --device cuda --out "$OUT/timing_block.json" > "$OUT/timing_block.log" 2>&1
rc=$?; echo "timing_block: rc=$rc $(( $(date +%s) - t0 ))s"; grep -v Warning "$OUT/timing_block.log" | tail -14 | cut -c1-600
if [ $rc -eq 0 ]; then
  t0=$(date +%s)
  KERNELCRAFT_TIMING_BLOCK=1 timeout ${HARNESS_S:-200} python3 benchmarks/harness.py --device cuda \
    --parts turnaround,throughput --out "$OUT/harness_block.json" > "$OUT/harness_block.log" 2>&1
  echo "harness (blocked): rc=$? $(( $(date +%s) - t0 ))s"
  grep -E "turnaround|per GPU-minute|cand_" "$OUT/harness_block.log" | cut -c1-330
fi
bash scripts/pack_out.sh
