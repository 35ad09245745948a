#!/usr/bin/env bash
# Where a pool worker's host CPU goes on the H200 machine (issue 11):
#   1. scripts/worker_profile.py: the worker's imports and N candidate jobs under cProfile
#   2. optionally (SCALE=1) benchmarks/scale.py with SCALE_ARGS
#   3. optionally (GPU_TESTS="-k expr") tests/test_gpu.py, the pool's crash, timeout and integrity paths on the GPU
# Usage: bash scripts/h200x2_profile.sh  (needs .whl/); everything lands in $OUT (packed)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source scripts/device_wheels.sh
(lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|MHz'; nproc; free -g) 2>&1 | tee "$OUT/host.txt"
[ "${PROFILE:-1}" = 1 ] && TRITON_CACHE_DIR=$(mktemp -d) timeout 200 python3 scripts/worker_profile.py --device cuda --candidates ${PROF_N:-4} --out "$OUT/profile" 2>&1 \
  | grep -v Warning | tee "$OUT/worker_profile.txt" | head -150
if [ "${SCALE:-0}" = 1 ]; then
  timeout ${SCALE_S:-400} python3 benchmarks/scale.py --device cuda --workers 1,2 ${SCALE_ARGS:-} --out "$OUT/scale.json" 2>&1 \
    | grep -v Warning | tail -8 | tee "$OUT/scale.log"
fi
if [ -n "${GPU_TESTS:-}" ]; then
  timeout ${GPU_TESTS_S:-240} python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py $GPU_TESTS 2>&1 | tail -15 | tee "$OUT/test_gpu.log"
fi
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
