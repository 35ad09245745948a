#!/usr/bin/env bash
# Session 9, device call 3 (~300 s). carry: [".whl"]   command: bash scripts/h200_s9_call3.sh
# Issue 19: the throughput run's small workloads end at the wall bound with the trusted rows (baseline,
# reference) as often unconverged as the candidate's (results/h200/harness-2026-12-02-s9.json). Test the
# host-jitter hypothesis: scripts/timing_block.py times three functions with and without the clock's
# blocking kernel on an idle host, beside a GIL-holding thread and beside busy cores; the blocker's GPU tests;
# then, if the blocker ran, the harness's turnaround and throughput with KERNELCRAFT_TIMING_BLOCK=1.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout 150 python3 scripts/timing_block.py --device cuda --out "$OUT/timing_block.json" > "$OUT/timing_block.log" 2>&1
rc=$?; echo "timing_block: rc=$rc $(( $(date +%s) - t0 ))s"; grep -v Warning "$OUT/timing_block.log" | tail -12 | cut -c1-600
t0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_timing_block.py > "$OUT/test_timing_block.log" 2>&1
echo "gpu tests: rc=$? $(( $(date +%s) - t0 ))s"; tail -5 "$OUT/test_timing_block.log"
if [ $rc -eq 0 ]; then
  t0=$(date +%s)
  KERNELCRAFT_TIMING_BLOCK=1 timeout ${HARNESS_S:-170} python3 benchmarks/harness.py --device cuda \
    --parts turnaround,throughput --out "$OUT/harness_block.json" > "$OUT/harness_block.log" 2>&1
  echo "harness (blocked): rc=$? $(( $(date +%s) - t0 ))s"
  grep -E "turnaround|per GPU-minute|cand_" "$OUT/harness_block.log" | cut -c1-330
fi
