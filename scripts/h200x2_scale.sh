#!/usr/bin/env bash
# One device call on a 2-GPU H200 machine (kind nvidia-h200-x2): the pool's throughput with 1 and 2
# GPUs (benchmarks/scale.py), written to results/h200x2/scale.json and copied to $OUT.
# Usage (device machine, repo root): bash scripts/h200x2_scale.sh [extra benchmarks/scale.py options]
# Needs in .whl/ the cp312 wheels of AGENTS.md (pydantic, pydantic_core, annotated_types,
# typing_inspection, sqlalchemy, alembic, mako, markupsafe); ray is not needed (local pool).
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" results/h200x2
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
timeout ${SCALE_TIMEOUT:-540} python3 benchmarks/scale.py --device cuda --workers 1,2 --out results/h200x2/scale.json "$@" 2>&1 | tee "$OUT/scale.log"
cp results/h200x2/scale.json "$OUT/" 2>/dev/null
