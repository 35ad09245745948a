#!/usr/bin/env bash
# One call on a 2-GPU H200 machine, both GPUs busy:
#   GPU 1: benchmarks/harness.py --parts turnaround,throughput (merged into results/h200/harness.json)
#   GPU 0: kernelcraft optimize --agent tuner:FILE over each given "task:file" (file relative to
#          tasks/<task>/), budget TUNE_BUDGET (default 12), ledger $OUT/ledger_tune.db
#   then both GPUs: benchmarks/scale.py (results/h200x2/scale.json)
# Usage: bash scripts/h200x2_tune.sh layernorm:candidates/triton_dispatch.py softmax:candidates/triton_dispatch.py
set -u
export PYTHONUNBUFFERED=1
start=$(date +%s)
OUT=${OUT:-/tmp/out}
DEADLINE=${DEADLINE:-575}
SCALE_S=${SCALE_S:-190}
mkdir -p "$OUT" results/h200 results/h200x2
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
( CUDA_VISIBLE_DEVICES=1 KERNELCRAFT_CACHE=/tmp/kc_cache_h timeout $(( $(left) - SCALE_S - 10 )) python3 benchmarks/harness.py \
    --device cuda --parts turnaround,throughput --out results/h200/harness.json 2>&1 | grep -v Warning > "$OUT/harness.log"
  cp results/h200/harness.json "$OUT/" ) &
hpid=$!
for spec in "$@"; do
  t=${spec%%:*}; f=tasks/$t/${spec#*:}
  l=$(( $(left) - SCALE_S - 10 )); [ "$l" -lt 40 ] && { echo "=== not run: $spec"; continue; }
  echo "=== tune $f (limit $l s, $(( $(date +%s) - start )) s elapsed)"
  CUDA_VISIBLE_DEVICES=0 timeout "$l" python3 -m kernelcraft optimize "tasks/$t" --agent "tuner:$f" --device cuda \
    --budget "${TUNE_BUDGET:-12}" --budget-ms "${BUDGET_MS:-100}" --db "sqlite:///$OUT/ledger_tune.db" \
    --json "$OUT/optimize_${t}_tuner.json" 2>&1 | grep -v Warning | tail -25 | tee "$OUT/tune_$t.log"
done
wait $hpid
cat "$OUT/harness.log"
l=$(( $(left) - 5 ))
echo "=== scale (limit $l s, $(( $(date +%s) - start )) s elapsed)"
if [ "$l" -gt 60 ]; then
  timeout "$l" python3 benchmarks/scale.py --device cuda --workers 1,2 --out results/h200x2/scale.json 2>&1 \
    | grep -v Warning | tee "$OUT/scale.log"
  cp results/h200x2/scale.json "$OUT/" 2>/dev/null
fi
echo "=== done in $(( $(date +%s) - start )) s"
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
