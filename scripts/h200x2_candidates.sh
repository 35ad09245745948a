#!/usr/bin/env bash
# One call on a 2-GPU H200 machine: the design loop over agent-written candidates, then the pool's
# scaling benchmark.
#   1. for each task given (default: the six with a candidates/ folder), `kernelcraft optimize
#      tasks/<t> --agent files:DIR` where DIR holds the task's promoted solutions/*.py and its
#      candidates/*.py: every candidate judged by the gauntlet on both GPUs, recorded in one ledger
#      ($OUT/ledger.db, exported as ledger_<t>.json) with its run summary optimize_<t>.json
#   2. benchmarks/scale.py (24 tuner variants of silu_mul, 1 and 2 GPUs, warm pool)
# Usage: bash scripts/h200x2_candidates.sh [task ...]   (needs .whl/, AGENTS.md)
set -u
export PYTHONUNBUFFERED=1
start=$(date +%s)
OUT=${OUT:-/tmp/out}
DEADLINE=${DEADLINE:-570}
SCALE_S=${SCALE_S:-200}
mkdir -p "$OUT" results/h200 results/h200x2
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(layernorm softmax fp8_rowwise_quant topk kmeans_assign balanced_kmeans_step)
for t in "${tasks[@]}"; do
  l=$(( $(left) - SCALE_S - 5 )); [ "$l" -gt 150 ] && l=150; [ "$l" -lt 40 ] && { echo "=== not run: $t"; continue; }
  dir=$(mktemp -d /tmp/kc_files_XXXX)
  cp tasks/$t/solutions/*.py tasks/$t/candidates/*.py "$dir/"
  n=$(ls "$dir"/*.py | wc -l)
  echo "=== $t: $n files (limit $l s, $(( $(date +%s) - start )) s elapsed)"
  timeout "$l" python3 -m kernelcraft optimize "tasks/$t" --agent "files:$dir" --device cuda --budget "$n" \
    --budget-ms "${BUDGET_MS:-100}" --db "sqlite:///$OUT/ledger.db" --json "$OUT/optimize_$t.json" 2>&1 \
    | grep -v Warning | tail -25 | tee "$OUT/optimize_$t.log"
done
python3 -m kernelcraft ledger show --db "sqlite:///$OUT/ledger.db" --json > "$OUT/ledger.json" 2>/dev/null
l=$(( $(left) - 5 ))
echo "=== scale (limit $l s, $(( $(date +%s) - start )) s elapsed)"
if [ "$l" -gt 60 ]; then
  timeout "$l" python3 benchmarks/scale.py --device cuda --workers 1,2 --out results/h200x2/scale.json 2>&1 \
    | grep -v Warning | tee "$OUT/scale.log"
  cp results/h200x2/scale.json "$OUT/" 2>/dev/null
fi
echo "=== done in $(( $(date +%s) - start )) s"
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
