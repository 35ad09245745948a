#!/usr/bin/env bash
# One call on a 2-GPU H200 machine (kind nvidia-h200-x2), each step under its own limit so every
# finished record comes back in $OUT:
#   1. benchmarks/scale.py: the local pool's throughput with 1 and 2 GPUs (results/h200x2/scale.json)
#   2. benchmarks/harness.py --parts turnaround,throughput on GPU 0 only, merged into
#      results/h200/harness.json (whose spread and ncu parts an earlier call measured)
#   3. the catalog's new tasks (scripts/h200_catalog.sh, then scripts/h200_catalog2.sh), each eval
#      spread over both GPUs by the pool, until the deadline
# Usage: bash scripts/h200x2_session.sh   (needs .whl/ as in AGENTS.md)
set -u
export PYTHONUNBUFFERED=1
start=$(date +%s)
OUT=${OUT:-/tmp/out}
DEADLINE=${DEADLINE:-575}
mkdir -p "$OUT" results/h200 results/h200x2
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
SCALE_TIMEOUT=${SCALE_TIMEOUT:-200} KC_NO_PACK=1 bash scripts/h200x2_scale.sh
export PYTHONPATH=/tmp/site:$PWD/src
export KERNELCRAFT_CACHE=/tmp/kc_cache
echo "=== harness ($(( $(date +%s) - start )) s)"
CUDA_VISIBLE_DEVICES=0 timeout 170 python3 benchmarks/harness.py --device cuda --parts turnaround,throughput \
  --out results/h200/harness.json 2>&1 | grep -v Warning | tee "$OUT/harness.log"
cp results/h200/harness.json "$OUT/"
echo "=== catalog ($(( $(date +%s) - start )) s)"
TOTAL_S=$(( $(left) - 10 )) TASK_S=90 KC_NO_PACK=1 bash scripts/h200_catalog.sh fused_add_rmsnorm layernorm gelu_tanh_mul rope fp8_rowwise_quant
for t in cross_entropy topk kmeans_assign balanced_kmeans_step; do
  l=$(( $(left) - 5 )); [ "$l" -lt 45 ] && { echo "=== not run: $t"; continue; }
  echo "=== $t (limit $l s)"
  timeout "$l" python3 -m kernelcraft eval "tasks/$t" --device cuda --with-compile --budget-ms 200 \
    --json "results/h200/$t.json" 2>&1 | tail -30 | tee "$OUT/$t.log"
  cp "results/h200/$t.json" "$OUT/" 2>/dev/null
done
echo "=== session done in $(( $(date +%s) - start )) s"

# at most 8 files come back from $OUT: one archive
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
