#!/usr/bin/env bash
# One call on a 2-GPU H200 machine: where every catalog task stands, to plan kernel work.
#   1. scripts/h200_catalog.sh: the eight catalog-I tasks' records (pool over both GPUs)
#   2. topk and kmeans_assign evals (catalog II)
#   3. kernelcraft profile of chosen solutions at their largest workload (ncu summary text)
# Everything lands in $OUT (packed). Usage: bash scripts/h200x2_diag.sh  (needs .whl/, AGENTS.md)
set -u
export PYTHONUNBUFFERED=1
start=$(date +%s)
OUT=${OUT:-/tmp/out}
DEADLINE=${DEADLINE:-570}
mkdir -p "$OUT" results/h200
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
TOTAL_S=${CAT_S:-300} TASK_S=80 KC_NO_PACK=1 bash scripts/h200_catalog.sh ${CAT_TASKS:-}
export PYTHONPATH=/tmp/site:$PWD/src
export KERNELCRAFT_CACHE=/tmp/kc_cache
for t in ${CAT2_TASKS:-topk kmeans_assign}; do
  l=$(( $(left) - 5 )); [ "$l" -gt 110 ] && l=110; [ "$l" -lt 45 ] && { echo "=== not run: $t"; continue; }
  echo "=== $t (limit $l s)"
  timeout "$l" python3 -m kernelcraft eval "tasks/$t" --device cuda --with-compile --budget-ms 200 \
    --json "results/h200/$t.json" 2>&1 | tail -30 | tee "$OUT/$t.log"
  cp "results/h200/$t.json" "$OUT/" 2>/dev/null
done
mkdir -p "$OUT/profiles"
for ts in ${PROFILES:-layernorm:triton_rowwise.py rope:triton_tokens.py fp8_rowwise_quant:triton_rowwise.py softmax:triton_online.py}; do
  t=${ts%%:*}; s=${ts#*:}
  l=$(( $(left) - 5 )); [ "$l" -gt 60 ] && l=60; [ "$l" -lt 25 ] && { echo "=== profile not run: $t"; continue; }
  echo "=== profile $t/$s (limit $l s)"
  timeout "$l" python3 -m kernelcraft profile "tasks/$t" "tasks/$t/solutions/$s" --device cuda \
    --out "$OUT/profiles/$t" 2>&1 | tail -40 | tee "$OUT/profiles/$t.txt"
  find "$OUT/profiles/$t" -name '*.ncu-rep' -delete 2>/dev/null
done
echo "=== diag done in $(( $(date +%s) - start )) s"
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
