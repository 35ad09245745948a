#!/usr/bin/env bash
# Session 7, device call 1 (~500 s). carry: [".whl"]   command: bash scripts/h200_s7_call1.sh
# 1. issue 19: the harness's turnaround (with each evaluation's phases) and candidates per GPU-minute after the
#    runner's no-op went to one rep in four and the comparison to one host copy per chunk
#    -> $OUT/harness.json (results/h200/harness-<date>-s7.json); where a rep's time goes -> $OUT/rep_costs.json;
# 2. issue 20: the GPU tests session 6 left unconfirmed (the wrong fixtures now one eval; the records test with
#    --with-baseline; the catalog's rmsnorm with timing), each in its own pytest with its own limit
#    -> $OUT/gpu_tests/<name>.txt, SUMMARY.txt.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/gpu_tests"
export KC_NO_PACK=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout ${HARNESS_S:-160} python3 benchmarks/harness.py --device cuda --parts turnaround,throughput \
  --out "$OUT/harness.json" > "$OUT/harness.log" 2>&1
echo "harness: rc=$? $(( $(date +%s) - t0 ))s"; grep -E "turnaround|per GPU-minute" "$OUT/harness.log"
t0=$(date +%s)
timeout ${REP_S:-50} python3 scripts/rep_costs.py --device cuda --out "$OUT/rep_costs.json" > "$OUT/rep_costs.log" 2>&1
echo "rep_costs: rc=$? $(( $(date +%s) - t0 ))s"; grep "^rows" "$OUT/rep_costs.log" | cut -c1-400
OUT=$OUT TESTS_S=${TESTS_S:-320} bash scripts/gpu_tests.sh \
  "tests/test_gpu.py::test_wrong_fixtures_caught_on_gpu[rmsnorm]" \
  tests/test_gpu_measure.py::test_side_stream_work_is_seen_as_escaped \
  tests/test_gpu_measure.py::test_records_carry_sol_and_no_honest_kernel_is_impossible \
  tests/test_gpu_measure.py::test_catalog_rmsnorm_has_no_false_rejection_with_timing
bash scripts/pack_out.sh
