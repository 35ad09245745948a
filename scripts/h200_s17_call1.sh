#!/usr/bin/env bash
# Next session, device call 1 (~360 s; written in session 16, NOT run yet). carry: [".whl"]
#   command: bash scripts/h200_s17_call1.sh
# Issue 19: the blocker's spin as PTX through the driver (session 16: Triton's first launch of the spin cost each fresh
# judge and runner ~0.6 s, +1.2 s a blocked turnaround). Its GPU tests (one PTX blocker per process, released turns,
# the generator after a failed capture), then the harness blocked and unblocked in the same call: make the blocker the
# default (kc-timing/7) only if the blocked throughput beats the unblocked one with cached turnaround <= 2 s.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_timing_block.py > "$OUT/test_timing_block.log" 2>&1
echo "gpu tests: rc=$? $(( $(date +%s) - t0 ))s"; tail -5 "$OUT/test_timing_block.log"
for mode in 1 0; do
  t0=$(date +%s)
  KERNELCRAFT_TIMING_BLOCK=$mode timeout ${HARNESS_S:-160} python3 benchmarks/harness.py --device cuda \
    --parts turnaround,throughput --out "$OUT/harness_block$mode.json" > "$OUT/harness_block$mode.log" 2>&1
  echo "harness (KERNELCRAFT_TIMING_BLOCK=$mode): rc=$? $(( $(date +%s) - t0 ))s"
  grep -E "turnaround|per GPU-minute" "$OUT/harness_block$mode.log" | cut -c1-300
done
bash scripts/pack_out.sh
