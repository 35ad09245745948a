#!/usr/bin/env bash
# Session 14, device call 5 (~400 s). carry: [".whl"]   command: bash scripts/h200_s14_call5.sh
# Issue 19: call 4's scripts/timing_block.py died at its first blocked turn (illegal memory access): the spin
# kernel read torch's pinned tensor through its host address. The blocker now takes mapped pinned memory from
# cudaHostAlloc(cudaHostAllocMapped) and passes cudaHostGetDevicePointer's address. The blocker's GPU tests first
# (a fault there ends the call early), then timing_block.py, then the harness with KERNELCRAFT_TIMING_BLOCK=1.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_timing_block.py > "$OUT/test_timing_block.log" 2>&1
trc=$?; echo "gpu tests: rc=$trc $(( $(date +%s) - t0 ))s"; tail -5 "$OUT/test_timing_block.log"
if [ $trc -eq 0 ]; then
  t0=$(date +%s)
  timeout 150 python3 scripts/timing_block.py --device cuda --out "$OUT/timing_block.json" > "$OUT/timing_block.log" 2>&1
  rc=$?; echo "timing_block: rc=$rc $(( $(date +%s) - t0 ))s"; grep -v Warning "$OUT/timing_block.log" | tail -14 | cut -c1-600
  if [ $rc -eq 0 ]; then
    t0=$(date +%s)
    KERNELCRAFT_TIMING_BLOCK=1 timeout ${HARNESS_S:-170} python3 benchmarks/harness.py --device cuda \
      --parts turnaround,throughput --out "$OUT/harness_block.json" > "$OUT/harness_block.log" 2>&1
    echo "harness (blocked): rc=$? $(( $(date +%s) - t0 ))s"
    grep -E "turnaround|per GPU-minute|cand_" "$OUT/harness_block.log" | cut -c1-330
  fi
fi
bash scripts/pack_out.sh
