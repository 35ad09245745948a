#!/usr/bin/env bash
# Session 13, device call 6 (~330 s). carry: [".whl", ".whl-peers/c1", ".kernelcraft/requests"]
#   command: bash scripts/h200_s13_call6.sh
# Issue 23, two pieces in one call (the session's last device budget):
# 1. the KDA wishlist request conless-leapquant-gdn-step (its definition, workloads and benchmark.py transcribed
#    into .kernelcraft/requests/, never committed; baseline.py a stand-in that imports tilelang as the real one
#    does first): tests/fixtures/kda_request_candidates/gdn_step_vsplit.py (value rows split across programs) and
#    one CONFIG variant, under the request's own generator, judge and benchmark.py ([validate]);
# 2. kda_prefill: candidates/triton_intra3.py (and KDA_VARIANTS, JSON CONFIG changes) beside FLA.
set -u
shopt -s nullglob
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
S=/tmp/step_variants; rm -rf $S
python3 scripts/config_variants.py tests/fixtures/kda_request_candidates/gdn_step_vsplit.py $S '{"BV": 16, "num_warps": 2}' \
  | tee "$OUT/step_variants.txt"
t0=$(date +%s)
RES=$OUT/requests KC_NO_PACK=1 ONLY=conless-leapquant-gdn-step EVAL_S=${REQ_S:-110} TOTAL_S=$(( ${REQ_S:-110} + 20 )) \
  CAND_FILES="tests/fixtures/kda_request_candidates/gdn_step_vsplit.py $S/gdn_step_vsplit_v0.py" \
  bash scripts/h200_requests.sh .kernelcraft/requests > "$OUT/requests.log" 2>&1
echo "requests: $(( $(date +%s) - t0 ))s"; tail -4 "$OUT/requests.log"
grep -v "leaked\|nanobind\|Warning" "$OUT/requests/conless-leapquant-gdn-step.log" | tail -22
V=/tmp/kda_variants; rm -rf $V; mkdir -p $V
if [ -n "${KDA_VARIANTS:-}" ]; then
  eval "python3 scripts/config_variants.py tasks/kda_prefill/candidates/triton_intra3.py $V $KDA_VARIANTS" | tee "$OUT/kda_variants.txt"
fi
t0=$(date +%s)
timeout ${KDA_S:-200} python3 -m kernelcraft eval tasks/kda_prefill tasks/kda_prefill/candidates/triton_intra3.py $V/*.py \
  --device cuda --peers --budget-ms 50 --no-confirm --json "$OUT/kda_prefill.json" > "$OUT/kda_prefill.log" 2>&1
echo "kda eval: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/kda_prefill.log" | tail -30
bash scripts/pack_out.sh
