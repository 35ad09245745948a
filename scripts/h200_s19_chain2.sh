#!/usr/bin/env bash
# SUPERSEDED by scripts/h200_s20_chain2.sh: the 46 MB half was refused (tree + carry over 64 MiB).
# Session 19, chain call 2 of 3, within 30 s of call 1 (<= 200 s). carry:
# [".whl-peers/halves/<libs-cu13>.part-00"] (46 MB: with the tree just under a call's 64 MiB)
#   command: bash scripts/h200_s19_chain2.sh
# Stashes the first half of nvidia-cutlass-dsl-libs-cu13 in /tmp for call 3, then the A/A of session 19 again under
# kc-timing/7 (rmsnorm and fused_add_rmsnorm: the promoted kernel also as a trusted row, Liger's code also as a
# candidate; scripts/h200_s19_aa.sh), and the topk candidates' CONFIG variants if a sweep list is given (TOPK_VARIANTS).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/whl-halves
start=$(date +%s)
cp .whl-peers/halves/*.part-00 /tmp/whl-halves/ && ls -la /tmp/whl-halves | tee "$OUT/stash.txt"
[ -d /tmp/site/pydantic ] || echo "call 1's /tmp/site is missing: not the same machine"
export PYTHONPATH=/tmp/fi-cache:/tmp/site:$PWD/src FLASHINFER_DISABLE_JIT=1 KERNELCRAFT_CACHE=/tmp/kc_cache
SKIP_INSTALL=1 TASKS="${TASKS:-rmsnorm fused_add_rmsnorm}" DEADLINE=$(( ${DEADLINE:-190} - ($(date +%s) - start) )) \
  OUT=$OUT bash scripts/h200_s19_aa.sh
echo "=== done in $(( $(date +%s) - start )) s"
