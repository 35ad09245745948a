#!/usr/bin/env bash
# Session 19, chain call 1 of 3 on one warm machine (<= 300 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1",
# ".whl-peers/c3", ".kernelcraft/flashinfer-cache"]               command: bash scripts/h200_s19_chain1.sh
# Every small peer wheel into /tmp/site in ONE pip command (kept for calls 2-3), FlashInfer's prebuilt modules into
# /tmp/fi-cache, then the catalog tasks whose peers need no cutlass-cu13: topk, silu_mul, gelu_tanh_mul
# (scripts/s19_catalog_evals.sh; kc-timing/7). Call 2 stashes half of the cutlass-cu13 wheel, call 3 joins it and
# evaluates the tasks with a quack peer.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
source scripts/catalog_wheels.sh  # SKIP_INSTALL=1: kept where a script before this one filled /tmp/site
export PYTHONPATH=/tmp/fi-cache:/tmp/site:$PWD/src FLASHINFER_DISABLE_JIT=1 KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import flashinfer, liger_kernel, fla; print('flashinfer', flashinfer.__version__)" 2>&1 | tail -1 | tee "$OUT/import.txt"
TASKS="${TASKS:-topk silu_mul gelu_tanh_mul}" DEADLINE=$(( ${DEADLINE:-290} - ($(date +%s) - start) )) bash scripts/s19_catalog_evals.sh
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
