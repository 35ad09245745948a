#!/usr/bin/env bash
# Issue 11's measurement on a 2-GPU H200 machine, after the template (forked workers) and the
# per-workload GPU holds: benchmarks/scale.py with 80 candidates at the default jobs per GPU
# (results/h200x2/scale.json) and at JOBS_ALT jobs per GPU (scale_jobs$JOBS_ALT.json), then, with
# the time left before DEADLINE, tests/test_gpu.py -k "$GPU_TESTS" (the pool's paths on the GPU).
# SCALE_ARGS go to both scale runs (e.g. "--order shuffled --seed 1"). ALT_ARGS (with ALT_NAME) instead
# of JOBS_ALT: a second run with these arguments in place of SCALE_ARGS, written to $ALT_NAME.json.
# Usage: bash scripts/h200x2_scale2.sh   (needs .whl/); $OUT packed
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
start=$(date +%s)
DEADLINE=${DEADLINE:-570}
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
N=${CANDIDATES:-80}
timeout ${SCALE_S:-240} python3 benchmarks/scale.py --device cuda --workers 1,2 --candidates "$N" ${SCALE_ARGS:-} --out "$OUT/scale.json" 2>&1 \
  | grep -v Warning | tail -6 | tee "$OUT/scale.log"
if [ -n "${JOBS_ALT:-}" ] && [ "$(left)" -gt 200 ]; then
  timeout $(( $(left) - 60 )) python3 benchmarks/scale.py --device cuda --workers 1,2 --candidates "$N" ${SCALE_ARGS:-} --jobs-per-gpu "$JOBS_ALT" \
    --out "$OUT/scale_jobs$JOBS_ALT.json" 2>&1 | grep -v Warning | tail -6 | tee "$OUT/scale_jobs$JOBS_ALT.log"
fi
if [ -n "${ALT_ARGS:-}" ] && [ "$(left)" -gt 200 ]; then
  timeout $(( $(left) - 30 )) python3 benchmarks/scale.py --device cuda --workers 1,2 --candidates "$N" $ALT_ARGS \
    --out "$OUT/${ALT_NAME:-scale_alt}.json" 2>&1 | grep -v Warning | tail -6 | tee "$OUT/${ALT_NAME:-scale_alt}.log"
fi
if [ -n "${GPU_TESTS:-}" ] && [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 10 )) python3 -m pytest -v -p no:cacheprovider tests/test_gpu.py -k "$GPU_TESTS" 2>&1 | tail -12 | tee "$OUT/test_gpu.log"
fi
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
