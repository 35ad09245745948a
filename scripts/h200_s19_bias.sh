#!/usr/bin/env bash
# Session 19, device call 4 (<= 120 s, any one-GPU kind). carry: [".whl"]
#   command: bash scripts/h200_s19_bias.sh
# scripts/runner_bias.py on the promoted rmsnorm: judge-process vs child-process (CUDA IPC) timing of one kernel
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
[ "${WHICH:-runner}" = runner ] && timeout 200 python3 scripts/runner_bias.py tasks/rmsnorm/solutions/triton_rowwise.py --out "$OUT/runner_bias.json" 2>&1 | tee "$OUT/runner_bias.txt"
[ "${WHICH:-runner}" = placement ] && timeout 200 python3 scripts/placement_bias.py tasks/rmsnorm/solutions/triton_rowwise.py --out "$OUT/placement_bias.json" 2>&1 | tee "$OUT/placement_bias.txt"
bash scripts/pack_out.sh
