#!/usr/bin/env bash
# Next device call (not yet run; written 2026-12-01 after session 4): what session 4's fixes need the GPU
# to show. carry: [".whl", ".kernelcraft/requests"]   command: bash scripts/h200_s5_call1.sh
# 1. the GPU-marked tests (issue 20's fixtures among them), every outcome kept in $OUT/gpu_tests.txt
#    even when the limit cuts the run (session 4's call was cut at 100 s with nothing kept);
# 2. the KDA requests session 4 found harness faults in: the four LeapQuant ones ([validate] could not
#    start CUDA: the /proc rule), the example (the judge ran out of memory comparing 2**31 elements) and
#    the two float64 FFTs (stress inputs failed to draw); expected: the honest candidates PASSED with
#    `validate PASSED` on the LeapQuant ones.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export KC_NO_PACK=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
timeout 240 python3 -m pytest -q -m gpu -rA -p no:cacheprovider tests/test_gpu_measure.py tests/test_holdouts.py \
  tests/test_gpu.py tests/test_cuda_fast.py tests/test_sanitize.py > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests: exit $?"; tail -5 "$OUT/gpu_tests.txt"
mkdir -p "$OUT/requests"
ONLY="conless-leapquant-gdn-step conless-leapquant-kda-step conless-leapquant-gdn-flush conless-leapquant-kda-flush example jasvixban-fft3d-r2c-f64 jasvixban-fft3d-c2r-f64" \
  OUT=$OUT/requests TOTAL_S=320 EVAL_S=70 bash scripts/h200_requests.sh .kernelcraft/requests 2>&1 | tail -12
bash scripts/pack_out.sh
