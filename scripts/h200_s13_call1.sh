#!/usr/bin/env bash
# Session 13, device call 1 (~250 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s13_call1.sh
# Issue 23, gdn_decode (triton_decode_bybatch 0.999x FLA, behind at batch 128-512 by 3.5-4.7%, 81.7% of the
# floor at 64): sweep candidates/triton_decode_knobs.py's switches (state load first, the evict_first hints on
# the state's load and store, FLA's flat grid; BV 4, 8, 16 at one warp), pick each batch's fastest
# (scripts/pick_by_batch.py --keys), then judge the written candidates/triton_decode_knobs_bybatch.py in a
# separate eval (its own seed and timing) beside triton_decode_bybatch and FLA.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
KEYS=BV,num_warps,STATE_FIRST,EVICT_LOAD,EVICT_STORE,GRID_1D
V=/tmp/variants; rm -rf $V
python3 scripts/config_variants.py tasks/gdn_decode/candidates/triton_decode_knobs.py $V \
  '{"STATE_FIRST": 0, "EVICT_LOAD": 1, "EVICT_STORE": 1, "GRID_1D": 0}' \
  '{"STATE_FIRST": 1, "EVICT_LOAD": 1, "EVICT_STORE": 1, "GRID_1D": 0}' \
  '{"STATE_FIRST": 0, "EVICT_LOAD": 0, "EVICT_STORE": 0, "GRID_1D": 0}' \
  '{"STATE_FIRST": 1, "EVICT_LOAD": 0, "EVICT_STORE": 0, "GRID_1D": 0}' \
  '{"STATE_FIRST": 1, "EVICT_LOAD": 0, "EVICT_STORE": 0, "GRID_1D": 1}' \
  '{"STATE_FIRST": 0, "EVICT_LOAD": 0, "EVICT_STORE": 0, "GRID_1D": 1}' \
  '{"STATE_FIRST": 1, "EVICT_LOAD": 1, "EVICT_STORE": 0, "GRID_1D": 0}' \
  '{"STATE_FIRST": 1, "EVICT_LOAD": 0, "EVICT_STORE": 1, "GRID_1D": 0}' \
  '{"STATE_FIRST": 1, "EVICT_LOAD": 1, "EVICT_STORE": 1, "GRID_1D": 1}' \
  '{"BV": 4, "STATE_FIRST": 1, "EVICT_LOAD": 0, "EVICT_STORE": 0, "GRID_1D": 0}' \
  '{"BV": 4, "STATE_FIRST": 1, "EVICT_LOAD": 1, "EVICT_STORE": 1, "GRID_1D": 0}' \
  '{"BV": 16, "STATE_FIRST": 0, "EVICT_LOAD": 1, "EVICT_STORE": 1, "GRID_1D": 0}' \
  '{"BV": 16, "STATE_FIRST": 1, "EVICT_LOAD": 0, "EVICT_STORE": 0, "GRID_1D": 0}' \
  | tee "$OUT/variants.txt"
t0=$(date +%s)
timeout ${SWEEP_S:-240} python3 -m kernelcraft eval tasks/gdn_decode $V/*.py --device cuda --peers --budget-ms 30 \
  --no-confirm --json "$OUT/gdn_decode_sweep.json" > "$OUT/gdn_decode_sweep.log" 2>&1
echo "sweep: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/gdn_decode_sweep.log" | tail -45
python3 scripts/pick_by_batch.py "$OUT/gdn_decode_sweep.json" tasks/gdn_decode/candidates/triton_decode_knobs.py \
  "$OUT/triton_decode_knobs_bybatch.py" --keys $KEYS | tee "$OUT/pick.txt"
if [ -f "$OUT/triton_decode_knobs_bybatch.py" ]; then
  cp "$OUT/triton_decode_knobs_bybatch.py" tasks/gdn_decode/candidates/triton_decode_knobs_bybatch.py
  t0=$(date +%s)
  timeout ${EVAL_S:-170} python3 -m kernelcraft eval tasks/gdn_decode tasks/gdn_decode/candidates/triton_decode_bybatch.py \
    tasks/gdn_decode/candidates/triton_decode_knobs_bybatch.py --device cuda --peers --budget-ms 100 --no-confirm \
    --json "$OUT/gdn_decode.json" > "$OUT/gdn_decode.log" 2>&1
  echo "eval: rc=$? $(( $(date +%s) - t0 ))s"
  grep -v "leaked\|nanobind\|Warning" "$OUT/gdn_decode.log" | tail -40
fi
bash scripts/pack_out.sh
