#!/usr/bin/env bash
# One device call: calibrate the H200, run the gpu-marked measurement and integrity tests, then the
# tuner on rmsnorm (issue 5). Results land in results/h200/ and are copied to $OUT.
# Usage (device machine, repo root): bash scripts/h200_measure.sh
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" results/h200
python3 -m kernelcraft calibrate --device cuda --json results/h200/calibration.json 2>&1 | tee "$OUT/calibrate.log"
cp results/h200/calibration.json "$OUT/"
timeout 280 python3 -m pytest -q -s -p no:cacheprovider tests/test_gpu_measure.py 2>&1 | tee "$OUT/gpu_measure.log"
TUNER_TIMEOUT=240 KC_NO_PACK=1 bash scripts/h200_tuner.sh rmsnorm "${TUNER_BUDGET:-6}"

# at most 8 files come back from $OUT: one archive
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
