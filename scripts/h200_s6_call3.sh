#!/usr/bin/env bash
# Session 6, device call 3 (~500 s): what call 1 (scripts/h200_s6_call1.sh) left unanswered.
# carry: [".whl", ".kernelcraft/requests"]   command: bash scripts/h200_s6_call3.sh
# 1. issue 22: gdn-flush and kda-flush (candidates back to contiguous indexing, inputs made contiguous in the
#    launcher: the strided-read version passed the 55 s evaluation limit in call 1) and fft3d-c2r fp32 under the
#    requests' own verifiers -> $OUT/requests (results/h200/requests/run5/);
# 2. issue 25: the Qwen3-Next eager capture again (call 2's ranked empty_like by its CPU time; fixed) -> $OUT/capture;
# 3. issue 20: the sanitizer test with 200 s (call 1 killed it at 100 s, nothing printed) -> $OUT/gpu_tests;
# 4. issue 19: scripts/rep_costs.py --device cuda (call 1: it initialised CUDA before forking its runner; fixed).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/gpu_tests" "$OUT/requests"
export KC_NO_PACK=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
ONLY="jasvixban-fft3d-c2r conless-leapquant-gdn-flush conless-leapquant-kda-flush" \
  OUT=$OUT/requests TOTAL_S=${REQ_S:-180} EVAL_S=${EVAL_S:-90} bash scripts/h200_requests.sh .kernelcraft/requests 2>&1 | tail -6
OUT=$OUT/capture_rerun MODELS=qwen3-next MODES=eager E2E=0 DEADLINE_S=${CAP_S:-130} \
  bash scripts/h200_capture.sh 2>&1 | tail -12
t=tests/test_sanitize.py::test_sanitizer_catches_what_numbers_cannot
t0=$(date +%s)
timeout ${SAN_S:-200} python3 -m pytest -q -m gpu -rA -p no:cacheprovider --durations=3 "$t" > "$OUT/gpu_tests/sanitizer.txt" 2>&1
echo "$? $(( $(date +%s) - t0 ))s $t" | tee -a "$OUT/gpu_tests/SUMMARY.txt"; tail -3 "$OUT/gpu_tests/sanitizer.txt"
t0=$(date +%s)
timeout ${REP_S:-45} python3 scripts/rep_costs.py --device cuda --close-after-rows 524289 --out "$OUT/rep_costs.json" \
  > "$OUT/rep_costs.log" 2>&1
echo "rep_costs: rc=$? $(( $(date +%s) - t0 ))s"; tail -8 "$OUT/rep_costs.log"
bash scripts/pack_out.sh
