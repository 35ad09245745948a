#!/usr/bin/env bash
# Session 9, device call 2 (~450 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s9_call2.sh
# Issue 23, gdn_prefill (0.70x FLA): the knobs its 2026-12-02 profile points at, in one eval (one seed: the
# float64 reference runs once per input for all variants, gauntlet/refcache.py), beside FLA and the current
# triton_chunk: _scan with one pipeline stage (120 KiB of shared memory per block at two: one block per SM),
# with wider and narrower V splits (BV 16 gave one sequence 64 programs for 132 SMs), _prep with 4 warps;
# and candidates/triton_split.py (_prep split in two, the inverse by 16 x 16 blocks, no 64 x 64 tile live).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
V=/tmp/gdn_variants
python3 scripts/config_variants.py tasks/gdn_prefill/solutions/triton_chunk.py $V \
  '{"SCAN_STAGES": 1}' '{"SCAN_STAGES": 1, "BV": 16}' '{"SCAN_STAGES": 1, "BV": 32}' \
  '{"SCAN_STAGES": 1, "SCAN_WARPS": 8}' '{"PREP_WARPS": 4}' '{"PREP_WARPS": 4, "SCAN_STAGES": 1}' | tee "$OUT/variants.txt"
t0=$(date +%s)
timeout ${EVAL_S:-420} python3 -m kernelcraft eval tasks/gdn_prefill tasks/gdn_prefill/solutions/triton_chunk.py \
  tasks/gdn_prefill/candidates/triton_split.py $V/*.py \
  --device cuda --peers --budget-ms 50 --no-confirm --json "$OUT/gdn_prefill_variants.json" > "$OUT/gdn_prefill_variants.log" 2>&1
echo "eval: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/gdn_prefill_variants.log" | tail -40
bash scripts/pack_out.sh
