# Sourced by scripts/h200_s14_call{2,3,4}.sh (bash, from the repository root, OUT set, the wheels installed) with
# VARS=(--variant NAME:FILE:JSON ...): one design round of the LeapQuant GDN step (KDA wishlist request
# conless-leapquant-gdn-step, its folder carried in .kernelcraft/requests):
# 1. scripts/leapquant_step_sweep.py over VARS at batch 64 / 256 / 512 (SWEEP_S, default 150 s);
# 2. the two fastest variants at batch 256 whose output error is at most 4x the vsplit row's, written as candidate
#    files with their CONFIG, through the request's eval (scripts/h200_requests.sh, REQ_S per request, default 120 s);
# 3. Nsight Compute sections of the fastest (its kernels' first launches at batch 256).
t0=$(date +%s)
timeout ${SWEEP_S:-150} python3 scripts/leapquant_step_sweep.py --batches 64,256,512 --out "$OUT/step_sweep.json" "${VARS[@]}" \
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
RES=$OUT/requests KC_NO_PACK=1 ONLY=conless-leapquant-gdn-step EVAL_S=${REQ_S:-120} TOTAL_S=$(( ${REQ_S:-120} + 20 )) \
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
