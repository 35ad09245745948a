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
OUT=$OUT TESTS_S=${TESTS_S:-230} bash scripts/gpu_tests.sh \
  "tests/test_gpu.py::test_wrong_fixtures_caught_on_gpu[rmsnorm]" \
  tests/test_gpu_measure.py::test_side_stream_work_is_seen_as_escaped \
  tests/test_gpu_measure.py::test_records_carry_sol_and_no_honest_kernel_is_impossible \
  tests/test_gpu_measure.py::test_catalog_rmsnorm_has_no_false_rejection_with_timing
bash scripts/pack_out.sh
