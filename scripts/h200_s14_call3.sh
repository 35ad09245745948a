#!/usr/bin/env bash
# Session 14, device call 3 (~470 s). carry: [".whl", ".whl-peers/c1", ".kernelcraft/requests"]
#   command: bash scripts/h200_s14_call3.sh
# Issue 23, two parts:
# 1. the LeapQuant GDN step: gdn_step_split's DOT path (the key vectors as int8 digits, the int8 rows against them
#    on the tensor cores: 48-80 registers where the FMA path had 93-96 and I2F per code) swept, the two fastest
#    through the request's eval (generator, judge, holdouts, [validate] with its out-of-memory retry), ncu of the pick;
# 2. kda_prefill: candidates/triton_intra3.py (lean _gate, SCAN_SPLIT_O: state kernel + output kernel; and its
#    fused path) beside triton_intra2 and FLA.
set -u
shopt -s nullglob
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
C=tests/fixtures/kda_request_candidates
VARS=(--variant "vsplit_bv32_w2:$C/gdn_step_vsplit.py:{\"BV\": 32, \"num_warps\": 2}")
VARS+=(--variant "split_bv32_w2_fma:$C/gdn_step_split.py:{\"BV\": 32, \"num_warps\": 2}")
for c in '32 2 2' '32 4 2' '64 2 2' '64 4 2' '64 8 2' '128 4 2' '128 8 2' '16 1 2' '32 1 2' '64 4 1' '64 4 4' '128 4 1' '128 4 4'; do set -- $c
  VARS+=(--variant "split_dot_bv$1_w$2_kw$3:$C/gdn_step_split.py:{\"BV\": $1, \"num_warps\": $2, \"KEY_WARPS\": $3, \"DOT\": 1}"); done
source scripts/leapquant_step_round.sh  # sweep, the two fastest through the request, ncu
t0=$(date +%s)
V=/tmp/kda_variants; rm -rf $V; mkdir -p $V
python3 scripts/config_variants.py tasks/kda_prefill/candidates/triton_intra3.py $V '{"SCAN_SPLIT_O": false}' | tee "$OUT/kda_variants.txt"
timeout ${KDA_S:-300} python3 -m kernelcraft eval tasks/kda_prefill tasks/kda_prefill/candidates/triton_intra2.py \
  tasks/kda_prefill/candidates/triton_intra3.py $V/*.py --device cuda --peers --budget-ms 50 --no-confirm \
  --json "$OUT/kda_prefill.json" > "$OUT/kda_prefill.log" 2>&1
echo "kda eval: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/kda_prefill.log" | tail -32
bash scripts/pack_out.sh
