#!/usr/bin/env bash
# Where a pool worker's host CPU goes on the H200 machine (issue 11):
#   1. scripts/fork_probe.py: a cold spawned worker against forks of a warm template
#   2. scripts/worker_profile.py: the worker's imports and N candidate jobs under cProfile
#   3. optionally (SCALE=1) benchmarks/scale.py with SCALE_ARGS
# Usage: bash scripts/h200x2_profile.sh  (needs .whl/); everything lands in $OUT (packed)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src
(lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|MHz'; nproc; free -g) 2>&1 | tee "$OUT/host.txt"
timeout 120 python3 scripts/fork_probe.py 2>&1 | grep -v Warning | tee "$OUT/fork_probe.txt"
TRITON_CACHE_DIR=$(mktemp -d) timeout 200 python3 scripts/worker_profile.py --device cuda --candidates ${PROF_N:-4} --out "$OUT/profile" 2>&1 \
  | grep -v Warning | tee "$OUT/worker_profile.txt" | head -150
if [ "${SCALE:-0}" = 1 ]; then
  timeout ${SCALE_S:-400} python3 benchmarks/scale.py --device cuda --workers 1,2 ${SCALE_ARGS:-} --out "$OUT/scale.json" 2>&1 \
    | grep -v Warning | tail -8 | tee "$OUT/scale.log"
fi
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
