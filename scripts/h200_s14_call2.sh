#!/usr/bin/env bash
# Session 14, device call 2 (~200 s). carry: [".whl", ".kernelcraft/requests"]   command: bash scripts/h200_s14_call2.sh
# Issue 23, the LeapQuant GDN decode step: call 1 found the split-value kernels register-bound (vsplit 148-203
# registers, 12.5-18.75% occupancy, DRAM 18-26%; best 21% of the bound). gdn_step_split.py reduces the key side once
# per pair in a small kernel and streams the value rows (int8 codes packed 4 to a register with PACK) through a
# second. Same steps as call 1: sweep, the pick through the request's eval, Nsight Compute of the pick.
set -u
shopt -s nullglob
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
C=tests/fixtures/kda_request_candidates
VARS=(--variant "vsplit_bv32_w2:$C/gdn_step_vsplit.py:{\"BV\": 32, \"num_warps\": 2}")
for c in '16 1 0 0' '32 2 0 0' '64 4 0 0' '16 1 1 0' '16 2 1 0' '32 1 1 0' '32 2 1 0' '32 4 1 0' '64 2 1 0' '64 4 1 0' \
         '128 4 1 0' '128 8 1 0' '16 1 1 1' '32 2 1 1' '64 4 1 1' '32 2 0 1'; do set -- $c
  VARS+=(--variant "split_bv$1_w$2_pack$3_magic$4:$C/gdn_step_split.py:{\"BV\": $1, \"num_warps\": $2, \"PACK\": $3, \"MAGIC\": $4}"); done
VARS+=(--variant "split_bv32_w2_pack1_kw1:$C/gdn_step_split.py:{\"BV\": 32, \"num_warps\": 2, \"PACK\": 1, \"KEY_WARPS\": 1}")
VARS+=(--variant "split_bv32_w2_pack1_kw4:$C/gdn_step_split.py:{\"BV\": 32, \"num_warps\": 2, \"PACK\": 1, \"KEY_WARPS\": 4}")
source scripts/leapquant_step_round.sh  # sweep, the two fastest through the request, ncu
bash scripts/pack_out.sh
