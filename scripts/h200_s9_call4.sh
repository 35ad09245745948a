#!/usr/bin/env bash
# Session 9, device call 4 (~450 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s9_call4.sh
# Issue 23, kda_prefill (triton_chunk 0.19x FLA; its _intra 255 registers with 232 spilled, 73-82% of kernel
# time: results/h200/profiles/kda_prefill/): candidates/triton_intra.py (one program per sub-chunk row,
# 165 registers and no spills for sm_90 by scripts/kda_prefill_regs.py; _prep 252, no spills) beside
# triton_chunk and FLA in one eval (one seed: the reference cache serves the second and later rows), then
# its profile at 8192 x 1.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout ${EVAL_S:-400} python3 -m kernelcraft eval tasks/kda_prefill tasks/kda_prefill/solutions/triton_chunk.py \
  tasks/kda_prefill/candidates/triton_intra.py --device cuda --peers --budget-ms 50 --no-confirm \
  --json "$OUT/kda_prefill_intra.json" > "$OUT/kda_prefill_intra.log" 2>&1
echo "eval: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/kda_prefill_intra.log" | tail -40
t0=$(date +%s)
timeout 90 python3 -m kernelcraft profile tasks/kda_prefill tasks/kda_prefill/candidates/triton_intra.py \
  --workload 1ca0667f --device cuda --out "$OUT/profile_intra_1ca0667f" > "$OUT/profile_intra_1ca0667f.log" 2>&1
echo "profile: rc=$? $(( $(date +%s) - t0 ))s"; grep -v "^$" "$OUT/profile_intra_1ca0667f.log" | tail -25
bash scripts/pack_out.sh
