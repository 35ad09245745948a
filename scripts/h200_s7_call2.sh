#!/usr/bin/env bash
# Session 7, device call 2 (~560 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s7_call2.sh
# Issue 21: the four catalog tasks whose H200 records still had only the old harness's dynamic torch.compile
# (topk, fp8_rowwise_quant, kmeans_assign, balanced_kmeans_step), re-run with torch.compile per workload
# (static shapes) and every peer of tasks/<t>/peers/ that imports (torch's own ops; FlashInfer's topk is not
# installed: its JIT build does not fit a call), --no-confirm as the 2026-12-01 catalog records
# (results/h200/README.md) -> $OUT/catalog/<t>.json (+ .log), catalog.txt.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/catalog"
export KC_NO_PACK=1
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
start=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - start) )); }
declare -A LIMIT=([topk]=150 [fp8_rowwise_quant]=110 [kmeans_assign]=130 [balanced_kmeans_step]=170)
for t in ${TASKS:-fp8_rowwise_quant topk kmeans_assign balanced_kmeans_step}; do
  l=$(left); [ "$l" -lt 40 ] && { echo "=== no time for $t"; continue; }
  lim=${LIMIT[$t]}; [ "$lim" -gt "$l" ] && lim=$l
  echo "=== $t (limit $lim s)"
  t0=$(date +%s)
  timeout "$lim" python3 -m kernelcraft eval tasks/$t --device cuda --peers --budget-ms 100 --no-confirm \
    --json "$OUT/catalog/$t.json" > "$OUT/catalog/$t.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  grep -v "leaked\|nanobind\|Warning" "$OUT/catalog/$t.log" | grep -A14 "x best peer" | head -14
done 2>&1 | tee "$OUT/catalog.txt"
bash scripts/pack_out.sh
