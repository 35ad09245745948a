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
t0=$(date +%s)
timeout ${SWEEP_S:-80} python3 scripts/leapquant_step_sweep.py --batches 64,256,512 --out "$OUT/step_sweep.json" "${VARS[@]}" \
  > "$OUT/step_sweep.log" 2>&1
echo "sweep: rc=$? $(( $(date +%s) - t0 ))s"; grep -iE "error|Traceback" "$OUT/step_sweep.log" | cut -c1-300 | head -5
python3 - "$OUT/step_sweep.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
for r in sorted((r for r in rows if "ms" in r), key=lambda r: (r["batch"], r["ms"])):
    print(f'{r["batch"]:4d} {r["variant"]:34s} {r["ms"]:.4f} ms {r["of_bound"]:.3f} of bound  err {r["max_err"][0]:.2e}')
PY
# the two fastest variants at batch 256 whose output error is at most 4x vsplit's, written
# as candidate files (CONFIG replaced as the tuner does)
S=/tmp/step_pick; rm -rf $S; mkdir -p $S
python3 - "$OUT/step_sweep.json" $S > "$OUT/step_pick.txt" <<'PY'
import json, sys
from pathlib import Path
from kernelcraft.agent.tuner import config_of, with_config
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["batch"] == 256 and "ms" in r]
base = max(r["max_err"][0] for r in rows if r["variant"].startswith("vsplit"))
ok = [r for r in rows if r["max_err"][0] <= 4 * base + 1e-6]
best = min(ok, key=lambda r: r["ms"])
second = min((r for r in ok if r is not best), key=lambda r: r["ms"])
for r in (best, second):
    dest = Path(sys.argv[2]) / f'gdn_step_{r["variant"]}.py'
    text = Path(r["file"]).read_text()
    dest.write_text(with_config(text, {**config_of(text), **r["config"]}))
    print(r["variant"], dest, f'{r["ms"]:.4f} ms', f'{r["of_bound"]:.3f} of the bound')
PY
cat "$OUT/step_pick.txt"
CANDS=$(awk '{printf " %s", $2}' "$OUT/step_pick.txt")
echo "candidates:$CANDS"; cp $CANDS "$OUT/" 2>/dev/null
t0=$(date +%s)
RES=$OUT/requests KC_NO_PACK=1 ONLY=conless-leapquant-gdn-step EVAL_S=${REQ_S:-90} TOTAL_S=$(( ${REQ_S:-120} + 20 )) \
  CAND_FILES="$CANDS" bash scripts/h200_requests.sh .kernelcraft/requests > "$OUT/requests.log" 2>&1
echo "requests: $(( $(date +%s) - t0 ))s"; tail -4 "$OUT/requests.log"
grep -v "leaked\|nanobind\|Warning" "$OUT/requests/conless-leapquant-gdn-step.log" | tail -24
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
best=$(head -1 "$OUT/step_pick.txt" | cut -d' ' -f1)
for v in "$best"; do
  t0=$(date +%s)
  timeout 60 "$NCU" --target-processes all -k regex:"_values|_keys|_gdn_step" --launch-count 2 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    python3 scripts/leapquant_step_sweep.py --ncu "$v" --batches 256 "${VARS[@]}" > "$OUT/ncu_$v.txt" 2>&1
  echo "ncu $v: rc=$? $(( $(date +%s) - t0 ))s"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|No Eligible|Issued Warp|Stall" "$OUT/ncu_$v.txt" | head -24
done
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
