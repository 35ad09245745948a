#!/usr/bin/env bash
# Session 32's H200 catalog chain, call B of 2 (<= 590 s), within 30 s of scripts/h200_s32_stash.sh (call A).
# `mv results /tmp/kc_results_hold` before it (carry size). carry: [".whl", ".whl-peers/c1", ".whl-peers/c3",
# ".kernelcraft/flashinfer-cache"]
#   command: CONFIRM=--confirm DEADLINE=560 bash scripts/h200_s32_catalog.sh
# Every small peer wheel into /tmp/site (scripts/catalog_wheels.sh), then call A's /tmp/site3 (quack's small wheels)
# and /tmp/site2 (cutlass-cu13) merged into it, each peer's import checked, then scripts/s19_catalog_evals.sh over
# TASKS (default: the six with a quack peer, then silu_mul and gelu_tanh_mul; SOFTMAX_EXTRA, FUSED_EXTRA as there) with static torch.compile, every peer
# that loads and the confirmation. Without call A's folders (not the same machine) the quack tasks are left out,
# saying so: a record whose quack row was SKIPPED for a missing wheel is no re-run of issue 21.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
source scripts/catalog_wheels.sh
if [ -d /tmp/site2/nvidia_cutlass_dsl ] && [ -d /tmp/site3/quack ]; then
  cp -r /tmp/site3/. /tmp/site/ && cp -r /tmp/site2/. /tmp/site/ && echo "quack stack merged into /tmp/site"
else
  echo "call A's /tmp/site2 or /tmp/site3 is missing (not the same machine): no quack"
fi
export PYTHONPATH=/tmp/fi-cache:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD/src FLASHINFER_DISABLE_JIT=1
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 scripts/peers_import.py 2>&1 | grep -v Warning | tee "$OUT/peers_import.txt"
QUACK_TASKS="softmax fused_add_rmsnorm rmsnorm layernorm cross_entropy rope"
T=${TASKS:-softmax fused_add_rmsnorm rmsnorm layernorm cross_entropy rope silu_mul gelu_tanh_mul}
if grep -q "^quack FAILED" "$OUT/peers_import.txt"; then
  keep=""; for t in $T; do [[ " $QUACK_TASKS " == *" $t "* ]] && echo "left out (quack does not import): $t" || keep="$keep $t"; done
  T=$keep
fi
TASKS="$T" DEADLINE=$(( ${DEADLINE:-560} - ($(date +%s) - start) )) bash scripts/s19_catalog_evals.sh
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
