#!/usr/bin/env bash
# Session 13, device call 3 (~90 s). carry: [".whl"]   command: bash scripts/h200_s13_call3.sh
# gdn_prefill: call 2 found triton_split and triton_split2 faulting (illegal memory access) at 8192 x 1; which kernel,
# at which lengths, and compute-sanitizer memcheck at 130 tokens.
set -u
source scripts/device_wheels.sh
for f in tasks/gdn_prefill/solutions/triton_chunk.py tasks/gdn_prefill/candidates/triton_split.py tasks/gdn_prefill/candidates/triton_split2.py; do
  echo "== $f"; timeout 60 python3 scripts/gdn_prefill_fault.py $f --lens 64 130 1,63,64,65 8192 2>&1 | grep -v Warn | tail -5
done
echo "== sanitizer split 130"; timeout 120 compute-sanitizer --tool memcheck --print-limit 5 python3 scripts/gdn_prefill_fault.py tasks/gdn_prefill/candidates/triton_split.py --lens 130 2>&1 | grep -v "^$" | head -40
