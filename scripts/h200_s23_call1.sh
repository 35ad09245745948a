#!/usr/bin/env bash
# Next session, call 1 on a fresh one-GPU machine (<= 590 s). carry: [".whl", ".whl-peers/c1", ".whl-peers/c3",
# ".kernelcraft/flashinfer-cache"]                                     command: bash scripts/h200_s23_call1.sh
# The card decides the first call:
# - H200: session 19's chain call 1 with the confirmation (topk with its promoted triton_radix_mc, silu_mul,
#   gelu_tanh_mul: results/h200 with FlashInfer, which the H200 records lack), then the process-handicap experiment
#   (scripts/h200_s23_handicap.sh) on rmsnorm with the time left (the H200 records had the opposite asymmetry);
# - otherwise (an H100): the same installs, then the handicap experiment on rmsnorm, layernorm, silu_mul.
# Calls 2-4 are then the same on both: `PLACEMENT=0 bash scripts/h200_s20_chain2.sh` (part-00),
# `bash scripts/h200_s20_chain3.sh` (part-01), and `CONFIRM=--confirm SOFTMAX_EXTRA="<cuda_cluster folders>"
# bash scripts/h200_s20_chain4.sh` (part-02, sha256): the six quack tasks (results/h200 on an H200).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name" | tee "$OUT/card.txt"
case "$name" in
  *H200*)
    OUT=$OUT/chain1 CONFIRM=--confirm DEADLINE=${CHAIN1_DEADLINE:-360} bash scripts/h200_s19_chain1.sh
    TASKS=rmsnorm DEADLINE=$(( ${DEADLINE:-580} - ($(date +%s) - start) )) OUT=$OUT/handicap bash scripts/h200_s23_handicap.sh ;;
  *)
    OUT=$OUT/install TASKS=" " DEADLINE=60 bash scripts/h200_s19_chain1.sh
    DEADLINE=$(( ${DEADLINE:-580} - ($(date +%s) - start) )) OUT=$OUT/handicap bash scripts/h200_s23_handicap.sh ;;
esac
echo "=== call 1 done in $(( $(date +%s) - start )) s"
