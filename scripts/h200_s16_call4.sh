#!/usr/bin/env bash
# Session 16, device call 4 (~470 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s16_call4.sh
# 1. Issue 19: the harness's turnaround and throughput WITHOUT the blocker (KERNELCRAFT_TIMING_BLOCK=0), in the same
#    session as call 3's blocked run: the A/B that decides whether the blocker becomes the default.
# 2. Issue 23, kda_prefill: call 2's sweep picks (PREP_WARPS 4: -9% at every long workload; SCAN_STAGES 3: -4%) through
#    `kernelcraft eval` beside FLA (every gate, holdouts, the peer row in the same run).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
KERNELCRAFT_TIMING_BLOCK=0 timeout ${HARNESS_S:-180} python3 benchmarks/harness.py --device cuda \
  --parts turnaround,throughput --out "$OUT/harness_noblock.json" > "$OUT/harness_noblock.log" 2>&1
echo "harness (unblocked): rc=$? $(( $(date +%s) - t0 ))s"
grep -E "turnaround|per GPU-minute" "$OUT/harness_noblock.log" | cut -c1-330
V=/tmp/kda_variants; rm -rf $V; mkdir -p $V
python3 scripts/config_variants.py tasks/kda_prefill/candidates/triton_intra3.py $V '{"PREP_WARPS": 4}' \
  '{"PREP_WARPS": 4, "SCAN_STAGES": 3}' | tee "$OUT/kda_variants.txt"
t0=$(date +%s)
timeout ${KDA_S:-330} python3 -m kernelcraft eval tasks/kda_prefill tasks/kda_prefill/candidates/triton_intra3.py \
  $V/*.py --device cuda --peers --budget-ms 50 --no-confirm --json "$OUT/kda_prefill.json" > "$OUT/kda_prefill.log" 2>&1
echo "kda eval: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/kda_prefill.log" | tail -32
bash scripts/pack_out.sh
