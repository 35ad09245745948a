#!/usr/bin/env bash
# Session 8, device call 4 (~480 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s8_call4.sh
# 1. issue 19 after kc-timing/5 (float32 flush read, one-tick CI): scripts/turn_costs.py (the flush
#    variants side by side), then benchmarks/harness.py --parts turnaround,throughput -> $OUT/harness.json;
# 2. issue 23: the Qwen3-Next hybrid e2e prefill record (its decode record came from call 3; the prefill
#    step ran past 200 s there): PHASES=prefill PREFILL_S=${PREFILL_S:-300} scripts/h200_e2e_qwen3next.sh.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout 60 python3 scripts/turn_costs.py --device cuda --out "$OUT/turn_costs.json" > "$OUT/turn_costs.log" 2>&1
echo "turn_costs: rc=$? $(( $(date +%s) - t0 ))s"; grep "flush\|turn_" "$OUT/turn_costs.log"
t0=$(date +%s)
timeout ${HARNESS_S:-170} python3 benchmarks/harness.py --device cuda --parts turnaround,throughput \
  --out "$OUT/harness.json" > "$OUT/harness.log" 2>&1
echo "harness: rc=$? $(( $(date +%s) - t0 ))s"; grep -E "turnaround|per GPU-minute|cand_" "$OUT/harness.log" | cut -c1-300
mkdir -p "$OUT/e2e"
OUT=$OUT/e2e KC_NO_PACK=1 PHASES=prefill PREFILL_S=${PREFILL_S:-300} DEADLINE_S=${E2E_S:-330} \
  bash scripts/h200_e2e_qwen3next.sh 2>&1 | grep -v "warn\|Warning" | tail -40
bash scripts/pack_out.sh
