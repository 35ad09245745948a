#!/usr/bin/env bash
# Session 13, device call 5 (~420 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s13_call5.sh
# Issue 23, kda_prefill (triton_intra 0.28x FLA; its profile: _intra's _diag column loop, four cross-thread
# reductions per column, memory units 92% with DRAM 1.4%): first GPU run of candidates/triton_intra2.py (a _gate
# kernel stores the chunk-local log2 decay and the norms; _intra loads row j from memory, two in-warp reductions
# per column; tl.dot between sub-chunks) beside triton_intra and FLA; then its profile at 8192 x 1 if time is left.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout ${EVAL_S:-330} python3 -m kernelcraft eval tasks/kda_prefill tasks/kda_prefill/candidates/triton_intra.py \
  tasks/kda_prefill/candidates/triton_intra2.py --device cuda --peers --budget-ms 50 --no-confirm \
  --json "$OUT/kda_prefill.json" > "$OUT/kda_prefill.log" 2>&1
echo "eval: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/kda_prefill.log" | tail -40
left=$(( ${TOTAL_S:-500} - ($(date +%s) - t0) ))
if [ $left -gt 60 ]; then
  t1=$(date +%s)
  timeout $(( left - 20 )) python3 -m kernelcraft profile tasks/kda_prefill tasks/kda_prefill/candidates/triton_intra2.py \
    --workload 1ca0667f --device cuda --out "$OUT/profile_intra2_1ca0667f" > "$OUT/profile_intra2_1ca0667f.log" 2>&1
  echo "profile: rc=$? $(( $(date +%s) - t1 ))s"; grep -v "^$" "$OUT/profile_intra2_1ca0667f.log" | tail -25
fi
bash scripts/pack_out.sh
