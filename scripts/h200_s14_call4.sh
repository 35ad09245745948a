#!/usr/bin/env bash
# Session 14, device call 4 (~480 s). carry: [".whl", ".kernelcraft/requests"]   command: bash scripts/h200_s14_call4.sh
# 1. Issue 23, the LeapQuant GDN step: gdn_step_split's DOT path with RB value rows per program looped BV at a time
#    (_values_loop: the digits loaded once, the int8 rows pipelined into shared memory by cp.async for the tensor
#    cores; call 3's ncu had _values L1/TEX-bound at 84%, DRAM 61%), swept, the fastest through the request's eval.
# 2. Issue 19: scripts/timing_block.py (the timer with and without NVBench's blocking kernel: idle host, beside a
#    GIL-holding thread, beside busy cores), then the harness's turnaround and throughput with
#    KERNELCRAFT_TIMING_BLOCK=1 (session 9's plan, scripts/h200_s9_call3.sh, without its GPU tests for time).
set -u
shopt -s nullglob
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
C=tests/fixtures/kda_request_candidates
VARS=(--variant "vsplit_bv32_w2:$C/gdn_step_vsplit.py:{\"BV\": 32, \"num_warps\": 2}")
VARS+=(--variant "split_dot_bv32_w1_kw2:$C/gdn_step_split.py:{\"BV\": 32, \"num_warps\": 1, \"DOT\": 1}")
for c in '32 1 128 2 2' '32 1 128 3 2' '32 1 64 2 2' '32 1 64 3 2' '64 2 128 2 2' '16 1 128 3 2' '32 1 128 2 1' '32 2 128 2 2' '64 4 128 2 2'; do set -- $c
  VARS+=(--variant "loop_bv$1_w$2_rb$3_st$4_kw$5:$C/gdn_step_split.py:{\"BV\": $1, \"num_warps\": $2, \"RB\": $3, \"STAGES\": $4, \"KEY_WARPS\": $5, \"DOT\": 1}"); done
SWEEP_S=${SWEEP_S:-80} REQ_S=${REQ_S:-90}
source scripts/leapquant_step_round.sh  # sweep, the two fastest through the request, ncu
t0=$(date +%s)
timeout 150 python3 scripts/timing_block.py --device cuda --out "$OUT/timing_block.json" > "$OUT/timing_block.log" 2>&1
rc=$?; echo "timing_block: rc=$rc $(( $(date +%s) - t0 ))s"; grep -v Warning "$OUT/timing_block.log" | tail -14 | cut -c1-600
if [ $rc -eq 0 ]; then
  t0=$(date +%s)
  KERNELCRAFT_TIMING_BLOCK=1 timeout ${HARNESS_S:-170} python3 benchmarks/harness.py --device cuda \
    --parts turnaround,throughput --out "$OUT/harness_block.json" > "$OUT/harness_block.log" 2>&1
  echo "harness (blocked): rc=$? $(( $(date +%s) - t0 ))s"
  grep -E "turnaround|per GPU-minute|cand_" "$OUT/harness_block.log" | cut -c1-330
fi
bash scripts/pack_out.sh
