#!/usr/bin/env bash
# Session 17, device call "evals2" (<= 300 s, a fresh machine). carry: [".whl", ".whl-peers/c1", ".whl-peers/c3",
# ".kernelcraft/flashinfer-cache"]          command: bash scripts/h200_s17_evals2.sh
# The catalog tasks the chained calls left: gelu_tanh_mul with the sweep's pick (triton_stream at num_warps 8, written by
# scripts/config_variants.py as the sweep wrote it), and rope, rmsnorm and topk, whose FlashInfer peers were never
# measured (prebuilt modules, scripts/flashinfer_prebuild.sh). No cutlass-cu13 libraries in this call: quack's rows
# (and FlashInfer's CuTe DSL norms) are SKIPPED or fall back, named in each record.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/catalog"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-290} - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl-peers/c1/*.whl .whl-peers/c3/*.whl > "$OUT/peer_install.txt" 2>&1 || echo "peer install FAILED"
export PYTHONPATH=$PWD/.kernelcraft/flashinfer-cache:/tmp/site:$PWD/src FLASHINFER_DISABLE_JIT=1
eval "$(python3 scripts/peer_jit_env.py)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 scripts/config_variants.py tasks/gelu_tanh_mul/candidates/triton_stream.py /tmp/gelu_v '{"BLOCK_N": 1024}' '{"num_warps": 8}'
declare -A SOLS=([gelu_tanh_mul]="tasks/gelu_tanh_mul/solutions/triton_tiled.py /tmp/gelu_v/triton_stream_v1.py tasks/gelu_tanh_mul/candidates/triton_stream.py"
  [rope]="tasks/rope/solutions/triton_tokens.py" [rmsnorm]="tasks/rmsnorm/solutions/triton_dps" [topk]="")
clean() { grep -v "leaked\|nanobind\|skipped rem\|refleaks\|Warning"; }
for t in ${TASKS:-gelu_tanh_mul rope rmsnorm topk}; do
  l=$(left); [ "$l" -lt 45 ] && { echo "=== no time for $t"; continue; }
  echo "=== $t ($l s left)"
  # shellcheck disable=SC2086
  timeout $(( l - 5 )) python3 -m kernelcraft eval tasks/$t ${SOLS[$t]} --with-baseline --device cuda --peers \
    --budget-ms ${BUDGET_MS:-100} --no-confirm --json "$OUT/catalog/$t.json" > "$OUT/catalog/$t.log" 2>&1
  echo "rc $?"
  clean < "$OUT/catalog/$t.log" | grep -B2 -A12 "x best peer" | head -20 | cut -c1-200
done 2>&1 | tee "$OUT/catalog.txt"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
