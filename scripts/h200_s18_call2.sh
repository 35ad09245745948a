#!/usr/bin/env bash
# Session 18, device call 2, right after call 1 on the same warm machine (<= 560 s). carry:
# [".whl-peers/parts/<libs-cu13>.part-01", ".kernelcraft/flashinfer-cache"]    command: bash scripts/h200_s18_call2.sh
# Stashes the second cutlass-cu13 part; keeps FlashInfer's modules prebuilt for sm_90a (scripts/flashinfer_prebuild.sh)
# in /tmp for call 3; then
#  1. the design sweep (scripts/catalog_sweep.py, timed with the eval's timer; never a verdict) of issue 21's new
#     candidates and their CONFIG variants beside the promoted kernels and every peer that loads but quack (its
#     libraries come in call 3), at the workloads the targets judge; copies to /tmp/sweep for call 3's picks;
#  2. `kernelcraft eval` (static torch.compile, every peer) of the tasks whose peers need no cutlass-cu13:
#     silu_mul, gelu_tanh_mul, topk, each with the sweep's two best variants.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/sweep
start=$(date +%s)
source scripts/peer_wheels.sh stash > "$OUT/stash.txt" 2>&1 || echo "stash FAILED"
rm -rf /tmp/fi-cache && cp -r .kernelcraft/flashinfer-cache /tmp/fi-cache
[ -d /tmp/site/pydantic ] || echo "call 1's /tmp/site is missing: not the same machine"
export PYTHONPATH=/tmp/fi-cache:/tmp/site:$PWD/src FLASHINFER_DISABLE_JIT=1 KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
SWEEP_PEERS=liger,fla,flashinfer,torch SWEEP_S=${SWEEP_S:-55} OUT=$OUT/sweep bash scripts/s18_sweep_part.sh
TASKS="silu_mul gelu_tanh_mul topk" DEADLINE=$(( ${DEADLINE:-550} - ($(date +%s) - start) )) OUT=$OUT \
  bash scripts/s18_evals_part.sh
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
