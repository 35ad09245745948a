#!/usr/bin/env bash
# Session 6, device call 4 (~250 s, what the session's budget had left). carry: [".whl"]
# command: bash scripts/h200_s6_call4.sh
# Issue 20: the GPU-marked tests fixed in session 5 (stale: peer rows taken for candidates) that no GPU run has
# confirmed since, one by one, each one's whole output in $OUT/gpu_tests/<name>.txt, SUMMARY.txt: exit code,
# seconds, test. The total is capped by TESTS_S.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/gpu_tests"
export KC_NO_PACK=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
start=$(date +%s)
TESTS_S=${TESTS_S:-230}
for t in \
  "tests/test_gpu.py::test_wrong_fixtures_caught_on_gpu[rmsnorm]" \
  tests/test_gpu_measure.py::test_side_stream_work_is_seen_as_escaped \
  tests/test_gpu_measure.py::test_records_carry_sol_and_no_honest_kernel_is_impossible \
  tests/test_gpu_measure.py::test_catalog_rmsnorm_has_no_false_rejection_with_timing \
  ; do
  left=$(( TESTS_S - ($(date +%s) - start) ))
  [ "$left" -lt 20 ] && { echo "skipped (time): $t" | tee -a "$OUT/gpu_tests/SUMMARY.txt"; continue; }
  lim=$(( left < 110 ? left : 110 ))
  n=$(echo "$t" | sed 's/.*:://; s/[][]/_/g')
  t0=$(date +%s)
  timeout "$lim" python3 -m pytest -q -m gpu -rA -p no:cacheprovider "$t" > "$OUT/gpu_tests/$n.txt" 2>&1
  rc=$?
  echo "$rc $(( $(date +%s) - t0 ))s $t" | tee -a "$OUT/gpu_tests/SUMMARY.txt"; tail -2 "$OUT/gpu_tests/$n.txt"
done
bash scripts/pack_out.sh
