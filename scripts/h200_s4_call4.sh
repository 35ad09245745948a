#!/usr/bin/env bash
# Session 4 (2026-12-01), device call 4 (issue 27): FlashInfer-Trace's real solutions on the H200
# (scripts/h200_interop.sh, ~5 min), then the 9 KernelBench level 1-3 problems too large for the 24 GB
# CPU machine (results/cpu/interop/issue27_counts.md), imported with the check on the GPU and their
# baselines evaluated there (checks only).
#   carry: [".whl", ".datasets/fib", ".datasets/kb9"]   command: bash scripts/h200_s4_call4.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export KC_NO_PACK=1
bash scripts/h200_interop.sh .datasets/fib 2>&1 | tail -45
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_kb_cache
t0=$(date +%s)
timeout 200 python3 scripts/interop_run.py kernelbench .datasets/kb9 --out /tmp/kb9 --device cuda --jobs 3 \
  --import-device cuda --import-max-memory-mb 0 --cpu-max-mb 16 --eval-timeout 150 2>&1 | tee "$OUT/kb9.log" | tail -15
echo "kernelbench 9: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/kb9.log"
mkdir -p "$OUT/kb9"
cp -r /tmp/kb9/records /tmp/kb9/summary.json /tmp/kb9/import.log "$OUT/kb9/" 2>/dev/null
for d in /tmp/kb9/tasks/*/; do [ -f "$d/README.md" ] && cp "$d/README.md" "$OUT/kb9/$(basename "$d").README.md"; done
bash scripts/pack_out.sh
