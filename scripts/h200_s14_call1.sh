#!/usr/bin/env bash
# Session 14, device call 1 (~330 s). carry: [".whl", ".whl-peers/c1", ".kernelcraft/requests"]
#   command: bash scripts/h200_s14_call1.sh
# Issue 23, the LeapQuant GDN decode step (request conless-leapquant-gdn-step; 15% of its memory bound so far):
# 1. design sweep (scripts/leapquant_step_sweep.py, do_bench outside the harness): gdn_step_triton, gdn_step_vsplit
#    CONFIGs and the persistent gdn_step_persist (next pair's tiles loaded while this one is computed; int32-packed
#    tiles; int8 -> float32 on the bits) at batch 64 / 256 / 512;
# 2. Nsight Compute on vsplit (today's fixture) and the sweep's fastest variant at batch 256: what limits them;
# 3. the fastest variant (and the fastest vsplit CONFIG) through kernelcraft eval of the request, with its
#    generator, judge, holdouts and its own benchmark.py ([validate]).
set -u
shopt -s nullglob
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
C=tests/fixtures/kda_request_candidates
VARS=(--variant "triton:$C/gdn_step_triton.py:{}")
for c in '16 2' '16 4' '32 2' '32 4' '32 8' '64 4' '64 8' '128 8'; do set -- $c
  VARS+=(--variant "vsplit_bv$1_w$2:$C/gdn_step_vsplit.py:{\"BV\": $1, \"num_warps\": $2}"); done
for c in '16 4 3 0' '16 4 4 0' '32 4 2 0' '32 4 3 0' '32 8 2 0' '64 8 1 0' '64 8 2 0' '32 4 3 2' '32 4 4 3' \
         '64 4 2 2' '128 8 1 2' '128 8 2 2' '16 2 6 0' '16 2 8 0'; do set -- $c
  VARS+=(--variant "persist_bv$1_w$2_pps$3_pipe$4:$C/gdn_step_persist.py:{\"BV\": $1, \"num_warps\": $2, \"PPS\": $3, \"PIPE\": $4}"); done
VARS+=(--variant "persist_bv32_w4_pps3_nomagic:$C/gdn_step_persist.py:{\"BV\": 32, \"num_warps\": 4, \"PPS\": 3, \"MAGIC\": 0}")
VARS+=(--variant "persist_bv32_w4_pps3_nopack:$C/gdn_step_persist.py:{\"BV\": 32, \"num_warps\": 4, \"PPS\": 3, \"PACK\": 0}")
t0=$(date +%s)
timeout ${SWEEP_S:-150} python3 scripts/leapquant_step_sweep.py --batches 64,256,512 --out "$OUT/step_sweep.json" "${VARS[@]}" \
  > "$OUT/step_sweep.log" 2>&1
echo "sweep: rc=$? $(( $(date +%s) - t0 ))s"; grep -v Warning "$OUT/step_sweep.log" | cut -c1-260 | tail -80
# the fastest variant at batch 256 whose output error is at most 4x vsplit's, and the fastest vsplit CONFIG, written
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
bestv = min((r for r in ok if r["variant"].startswith("vsplit")), key=lambda r: r["ms"])
for r in {id(best): best, id(bestv): bestv}.values():
    dest = Path(sys.argv[2]) / f'gdn_step_{r["variant"]}.py'
    text = Path(r["file"]).read_text()
    dest.write_text(with_config(text, {**config_of(text), **r["config"]}))
    print(r["variant"], dest, f'{r["ms"]:.4f} ms', f'{r["of_bound"]:.3f} of the bound')
PY
cat "$OUT/step_pick.txt"
CANDS=$(awk '{printf " %s", $2}' "$OUT/step_pick.txt")
echo "candidates:$CANDS"; cp $CANDS "$OUT/" 2>/dev/null
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
best=$(head -1 "$OUT/step_pick.txt" | cut -d' ' -f1)
for v in vsplit_bv32_w4 "$best"; do
  t0=$(date +%s)
  timeout 60 "$NCU" --target-processes all -k regex:_gdn_step --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    python3 scripts/leapquant_step_sweep.py --ncu "$v" --batches 256 "${VARS[@]}" > "$OUT/ncu_$v.txt" 2>&1
  echo "ncu $v: rc=$? $(( $(date +%s) - t0 ))s"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|No Eligible|Issued Warp|Stall" "$OUT/ncu_$v.txt" | head -24
done
t0=$(date +%s)
RES=$OUT/requests KC_NO_PACK=1 ONLY=conless-leapquant-gdn-step EVAL_S=${REQ_S:-120} TOTAL_S=$(( ${REQ_S:-120} + 20 )) \
  CAND_FILES="$CANDS" bash scripts/h200_requests.sh .kernelcraft/requests > "$OUT/requests.log" 2>&1
echo "requests: $(( $(date +%s) - t0 ))s"; tail -4 "$OUT/requests.log"
grep -v "leaked\|nanobind\|Warning" "$OUT/requests/conless-leapquant-gdn-step.log" | tail -24
bash scripts/pack_out.sh
