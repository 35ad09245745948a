#!/usr/bin/env bash
# The first device call of the next session (written 2026-12-01, session 5; not yet run), ~470 s.
# carry: [".whl", ".kernelcraft/requests"]   command: bash scripts/h200_s6_call1.sh
# 1. issue 22: gdn-flush, kda-flush (candidates fixed: strided reads) and fft3d-c2r fp32 (float64
#    accumulation) under the requests' own verifiers -> $OUT/requests (results/h200/requests/run5/);
# 2. issue 20: the sanitizer test (its compute-sanitizer runs side by side now) -> $OUT/gpu_tests;
# 3. issue 19: where a timed repetition's time goes on the GPU (scripts/rep_costs.py, the int32-holdout
#    teardown included) and the pool's throughput/turnaround after the per-rep patch
#    (benchmarks/harness.py) -> $OUT/rep_costs.json, $OUT/harness.json (results/h200/harness-<date>.json).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/gpu_tests" "$OUT/requests"
export KC_NO_PACK=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
ONLY="conless-leapquant-gdn-flush conless-leapquant-kda-flush jasvixban-fft3d-c2r" \
  OUT=$OUT/requests TOTAL_S=${REQ_S:-150} EVAL_S=55 bash scripts/h200_requests.sh .kernelcraft/requests 2>&1 | tail -6
t=tests/test_sanitize.py::test_sanitizer_catches_what_numbers_cannot
t0=$(date +%s)
timeout ${SAN_S:-100} python3 -m pytest -q -m gpu -rA -p no:cacheprovider "$t" > "$OUT/gpu_tests/sanitizer.txt" 2>&1
echo "$? $(( $(date +%s) - t0 ))s $t" | tee -a "$OUT/gpu_tests/SUMMARY.txt"; tail -3 "$OUT/gpu_tests/sanitizer.txt"
t0=$(date +%s)
timeout ${REP_S:-60} python3 scripts/rep_costs.py --device cuda --close-after-rows 524289 --out "$OUT/rep_costs.json" \
  > "$OUT/rep_costs.log" 2>&1
echo "rep_costs: rc=$? $(( $(date +%s) - t0 ))s"; tail -8 "$OUT/rep_costs.log"
t0=$(date +%s)
timeout ${HARNESS_S:-150} python3 benchmarks/harness.py --device cuda --parts turnaround,throughput \
  --out "$OUT/harness.json" > "$OUT/harness.log" 2>&1
echo "harness: rc=$? $(( $(date +%s) - t0 ))s"; tail -6 "$OUT/harness.log"
bash scripts/pack_out.sh
