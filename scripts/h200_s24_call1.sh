#!/usr/bin/env bash
# Session 24's first call when the device is scarce (<= 575 s; any one-GPU kind). carry: [".whl", ".whl-peers/c1"]
#   command: bash scripts/h200_s24_call1.sh
# Both open questions in one call, in case no second machine comes (session 24 was refused four times before it):
# 1. the A/B of `--trusted-timing runner` on rmsnorm (scripts/h200_s23_symmetric.sh without Inductor's
#    code dumps; ~200 s), 2. gdn_prefill's triton_chunk3 and triton_chunk4, both with the fused serial scan (scripts/h200_s24_la.sh without
#    the split profile: the fault checks, then the eval beside FLA with the confirmation, in the rest of the call).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/sym" "$OUT/la"
start=$(date +%s)
OUT=$OUT/sym DEADLINE=${SYM_DEADLINE:-140} TASKS="${SYM_TASKS:-rmsnorm}" SKIP_INDUCTOR=1 NO_PACK=1 \
  bash scripts/h200_s23_symmetric.sh
OUT=$OUT/la DEADLINE=$(( ${DEADLINE:-570} - ($(date +%s) - start) )) SKIP_SPLIT=${SKIP_SPLIT:-1} NO_PACK=1 FAULT="c4_fused" EVAL="c3_fused c4_fused" \
  bash scripts/h200_s24_la.sh
echo "=== call done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
