#!/usr/bin/env bash
# Session 13, device call 2 (~400 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s13_call2.sh
# Issue 23, gdn_prefill (triton_chunk 0.70x FLA; its _prep spills 66 registers): first GPU run of
# candidates/triton_split.py (_prep split in two, the inverse by 16 x 16 blocks) and of triton_split2.py (the
# same with A's blocks formed first from the raw bf16 keys: 76 bytes of spill a thread instead of 1,420),
# triton_split2 at 8 warps for _kkt_inv (24 bytes), beside triton_chunk and FLA, in one eval (one seed: the
# float64 reference runs once per input for all, gauntlet/refcache.py).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
V=/tmp/gdn_variants; rm -rf $V
python3 scripts/config_variants.py tasks/gdn_prefill/candidates/triton_split2.py $V '{"KKT_WARPS": 8}' | tee "$OUT/variants.txt"
t0=$(date +%s)
timeout ${EVAL_S:-480} python3 -m kernelcraft eval tasks/gdn_prefill tasks/gdn_prefill/solutions/triton_chunk.py \
  tasks/gdn_prefill/candidates/triton_split.py tasks/gdn_prefill/candidates/triton_split2.py $V/*.py \
  --device cuda --peers --budget-ms 50 --no-confirm --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
echo "eval: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/gdn_prefill.log" | tail -40
bash scripts/pack_out.sh
