#!/usr/bin/env bash
# Session 12, device call 3 (~300 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s12_call3.sh
# Issue 23, gdn_decode (triton_decode 0.895x FLA; its profile: 32 programs for 132 SMs at batch 1, state loads
# waiting with a third of the warps resident at batch 256): sweep triton_decode's TUNABLES (the 12 (BV, warps)
# pairs that hold their tile in at most 64 floats a thread), pick each batch's fastest (scripts/pick_by_batch.py),
# then judge the written candidates/triton_decode_bybatch.py in a separate eval (its own seed and timing) beside
# triton_decode and FLA.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
V=/tmp/variants; rm -rf $V
python3 scripts/config_variants.py tasks/gdn_decode/solutions/triton_decode.py $V \
  '{"BV": 8, "num_warps": 1}' '{"BV": 16, "num_warps": 1}' '{"BV": 8, "num_warps": 2}' '{"BV": 16, "num_warps": 2}' \
  '{"BV": 32, "num_warps": 2}' '{"BV": 8, "num_warps": 4}' '{"BV": 16, "num_warps": 4}' '{"BV": 32, "num_warps": 4}' \
  '{"BV": 64, "num_warps": 4}' '{"BV": 16, "num_warps": 8}' '{"BV": 32, "num_warps": 8}' '{"BV": 64, "num_warps": 8}' \
  | tee "$OUT/variants.txt"
t0=$(date +%s)
timeout ${SWEEP_S:-200} python3 -m kernelcraft eval tasks/gdn_decode $V/*.py --device cuda --no-peers --budget-ms 30 \
  --no-confirm --json "$OUT/gdn_decode_sweep.json" > "$OUT/gdn_decode_sweep.log" 2>&1
echo "sweep: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/gdn_decode_sweep.log" | tail -45
python3 scripts/pick_by_batch.py "$OUT/gdn_decode_sweep.json" tasks/gdn_decode/candidates/triton_decode_bybatch.py \
  "$OUT/triton_decode_bybatch.py" | tee "$OUT/pick.txt"
if [ -f "$OUT/triton_decode_bybatch.py" ]; then
  cp "$OUT/triton_decode_bybatch.py" tasks/gdn_decode/candidates/triton_decode_bybatch.py
  t0=$(date +%s)
  timeout ${EVAL_S:-150} python3 -m kernelcraft eval tasks/gdn_decode tasks/gdn_decode/solutions/triton_decode.py \
    tasks/gdn_decode/candidates/triton_decode_bybatch.py --device cuda --peers --budget-ms 100 --no-confirm \
    --json "$OUT/gdn_decode.json" > "$OUT/gdn_decode.log" 2>&1
  echo "eval: rc=$? $(( $(date +%s) - t0 ))s"
  grep -v "leaked\|nanobind\|Warning" "$OUT/gdn_decode.log" | tail -40
fi
bash scripts/pack_out.sh
