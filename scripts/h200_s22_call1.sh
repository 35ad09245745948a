#!/usr/bin/env bash
# Session 22, call 1 on a fresh one-GPU machine (<= 590 s). carry: [".whl", ".whl-peers/c1", ".whl-peers/c3",
# ".kernelcraft/flashinfer-cache"]                                     command: bash scripts/h200_s22_call1.sh
# The card decides the first call (the machine kind is whichever came):
# - H200: session 19's chain call 1 with the confirmation (topk with its promoted triton_radix_mc, silu_mul,
#   gelu_tanh_mul; every small peer wheel and FlashInfer's prebuilt modules into /tmp/site, /tmp/fi-cache), then the
#   --peers-beside A/A on rmsnorm with the time left;
# - otherwise (an H100): the same installs, then the --peers-beside A/A (scripts/h200_s22_beside.sh), the harness
#   question an H100 shows best (+0.50 us baseline asymmetry there).
# AFTER=<script> AFTER_DIR=<folder under $OUT> H200_TASKS=<tasks>: another experiment in the A/A's place (scripts/h200_s23_call1.sh: the
# handicap experiment). Calls 2-4 are then the same on both: `PLACEMENT=0 bash scripts/h200_s20_chain2.sh` (part-00),
# `bash scripts/h200_s20_chain3.sh` (part-01), `CONFIRM=--confirm bash scripts/h200_s20_chain4.sh` (part-02, sha256).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
AFTER=${AFTER:-scripts/h200_s22_beside.sh} AFTER_DIR=${AFTER_DIR:-beside}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name" | tee "$OUT/card.txt"
case "$name" in
  *H200*)
    OUT=$OUT/chain1 CONFIRM=--confirm DEADLINE=${CHAIN1_DEADLINE:-360} bash scripts/h200_s19_chain1.sh
    TASKS=${H200_TASKS:-rmsnorm} DEADLINE=$(( ${DEADLINE:-580} - ($(date +%s) - start) )) OUT=$OUT/$AFTER_DIR bash "$AFTER" ;;
  *)
    OUT=$OUT/install TASKS=" " DEADLINE=60 bash scripts/h200_s19_chain1.sh
    DEADLINE=$(( ${DEADLINE:-580} - ($(date +%s) - start) )) OUT=$OUT/$AFTER_DIR bash "$AFTER" ;;
esac
echo "=== call 1 done in $(( $(date +%s) - start )) s"
