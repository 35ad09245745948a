#!/usr/bin/env bash
# Next session, call 1 on a fresh one-GPU machine (<= 590 s). carry: [".whl", ".whl-peers/c1", ".whl-peers/c3",
# ".kernelcraft/flashinfer-cache"]                                     command: bash scripts/h200_s23_call1.sh
# scripts/h200_s22_call1.sh with the process-handicap experiment (scripts/h200_s23_handicap.sh) in the A/A's place:
# - H200: session 19's chain call 1 with the confirmation (topk with its promoted triton_radix_mc, silu_mul,
#   gelu_tanh_mul: results/h200 with FlashInfer, which the H200 records lack), then the experiment on rmsnorm (the
#   H200 records had the opposite asymmetry);
# - otherwise (an H100): the same installs, then the experiment on rmsnorm, layernorm, silu_mul.
# Calls 2-4 are then the same on both: `PLACEMENT=0 bash scripts/h200_s20_chain2.sh` (part-00),
# `bash scripts/h200_s20_chain3.sh` (part-01), and `CONFIRM=--confirm SOFTMAX_EXTRA="<cuda_cluster folders>"
# bash scripts/h200_s20_chain4.sh` (part-02, sha256): the six quack tasks (results/h200 on an H200).
AFTER=scripts/h200_s23_handicap.sh AFTER_DIR=handicap H200_TASKS=rmsnorm exec bash scripts/h200_s22_call1.sh
