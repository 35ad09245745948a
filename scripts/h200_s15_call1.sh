#!/usr/bin/env bash
# Next session, device call 1 (~480 s; written in session 14, NOT run yet). carry: [".whl", ".kernelcraft/requests"]
#   command: bash scripts/h200_s15_call1.sh
# 1. Issue 19: session 14's timing_block.py faults were its inputs freed under the graph replays (time_interleaved
#    dropped the caller's temporary dict of closures; the replay now keeps its callable). The GPU regression test,
#    then timing_block.py (the blocker vs none: idle, GIL thread, busy cores), then the harness with the blocker.
# 2. Issue 23, the LeapQuant step: gdn_step_split's FUSED path (the key side and all rows in one program per pair: no
#    scratch, no second launch; `_keys` was 24 of ~90 us in session 14's profile) beside the 62% record's CONFIG.
set -u
shopt -s nullglob
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
C=tests/fixtures/kda_request_candidates
VARS=(--variant "vsplit_bv32_w2:$C/gdn_step_vsplit.py:{\"BV\": 32, \"num_warps\": 2}")
VARS+=(--variant "loop_kw1:$C/gdn_step_split.py:{\"KEY_WARPS\": 1}")
# 1 warp spills (ptxas, local memory)
for c in '32 2 2' '32 2 3' '32 4 2' '32 4 3' '64 4 2' '16 2 3'; do set -- $c
  VARS+=(--variant "fused_bv$1_w$2_st$3:$C/gdn_step_split.py:{\"BV\": $1, \"num_warps\": $2, \"STAGES\": $3, \"FUSED\": 1}"); done
SWEEP_S=${SWEEP_S:-80} REQ_S=${REQ_S:-90}
source scripts/leapquant_step_round.sh  # sweep, the two fastest through the request, ncu
t0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_timing_block.py > "$OUT/test_timing_block.log" 2>&1
trc=$?; echo "gpu tests: rc=$trc $(( $(date +%s) - t0 ))s"; tail -5 "$OUT/test_timing_block.log"
rc=1
if [ $trc -eq 0 ]; then
  t0=$(date +%s)
  timeout 150 python3 scripts/timing_block.py --device cuda --out "$OUT/timing_block.json" > "$OUT/timing_block.log" 2>&1
  rc=$?; echo "timing_block: rc=$rc $(( $(date +%s) - t0 ))s"; grep -v Warning "$OUT/timing_block.log" | tail -14 | cut -c1-600
fi
if [ $rc -eq 0 ]; then
  t0=$(date +%s)
  KERNELCRAFT_TIMING_BLOCK=1 timeout ${HARNESS_S:-170} python3 benchmarks/harness.py --device cuda \
    --parts turnaround,throughput --out "$OUT/harness_block.json" > "$OUT/harness_block.log" 2>&1
  echo "harness (blocked): rc=$? $(( $(date +%s) - t0 ))s"
  grep -E "turnaround|per GPU-minute|cand_" "$OUT/harness_block.log" | cut -c1-330
fi
bash scripts/pack_out.sh
