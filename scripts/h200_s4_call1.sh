#!/usr/bin/env bash
# Session 4 (2026-12-01), device call 1: Nsight Compute confirmation variants (issue 19), then the KDA
# wishlist requests (issue 22) in the time left.
#   carry: [".whl", ".kernelcraft/requests"]   command: bash scripts/h200_s4_call1.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export KC_NO_PACK=1 VARIANT_S=80
bash scripts/h200_confirm_variants.sh 2>&1 | tail -60
mkdir -p "$OUT/requests"
OUT=$OUT/requests TOTAL_S=230 EVAL_S=70 bash scripts/h200_requests.sh .kernelcraft/requests 2>&1 | tail -30
bash scripts/pack_out.sh
