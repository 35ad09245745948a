#!/usr/bin/env bash
# Session 5, device call 4 (the last 250 s of the session's device time).
# carry: [".whl", ".kernelcraft/requests"]   command: bash scripts/h200_s5_call4.sh
# 1. the three KDA requests whose H200 verdicts were not yet honest PASSes: gdn-flush (our candidate,
#    fixed since the request's verifier REJECTED it on its "second window" input), kda-flush (a harness
#    out-of-memory at the int32 holdout, fixed: runner/shared.py), fft3d-c2r fp32 (the candidate made
#    accurate since: INCORRECT on 30 of 16.8M elements in run1);
# 2. the sanitizer test, now that the candidates' compute-sanitizer runs go side by side.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/gpu_tests" "$OUT/requests"
export KC_NO_PACK=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
ONLY="conless-leapquant-gdn-flush conless-leapquant-kda-flush jasvixban-fft3d-c2r" \
  OUT=$OUT/requests TOTAL_S=${REQ_S:-135} EVAL_S=50 bash scripts/h200_requests.sh .kernelcraft/requests 2>&1 | tail -6
t=tests/test_sanitize.py::test_sanitizer_catches_what_numbers_cannot
t0=$(date +%s)
timeout ${SAN_S:-70} python3 -m pytest -q -m gpu -rA -p no:cacheprovider "$t" > "$OUT/gpu_tests/sanitizer.txt" 2>&1
echo "$? $(( $(date +%s) - t0 ))s $t" | tee -a "$OUT/gpu_tests/SUMMARY.txt"
tail -3 "$OUT/gpu_tests/sanitizer.txt"
bash scripts/pack_out.sh
