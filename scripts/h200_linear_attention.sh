#!/usr/bin/env bash
# Linear attention on the H200 (issue 23), one device call, under 8 minutes (not yet run on the device):
#   1. eval of gdn_decode, gdn_prefill, kda_prefill (baseline + every solution in solutions/, budget
#      100 ms): records in results/h200/<task>.json, copied to $OUT;
#   2. scripts/linear_attention_bench.py: the solutions, baselines and FLA peers (tasks/<t>/peers/fla.py)
#      per workload and prefill stress scenario, judged by each contract against the float64
#      reference and timed (graph replay + flushed L2, and triton.testing.do_bench); decode as % of a
#      1 GiB copy; $OUT/linear_attention_bench.json and .log;
#   3. a short table last (the bench's summary: per workload ms, x FLA, % of copy).
# Each step has its own time limit, so one slow step cannot eat the call.
# Needs .whl/ (the base wheels, scripts/device_wheels.sh) and .whl-peers/ with fla-core,
# flash-linear-attention and einops wheels (only what the device lacks gets installed; without them
# the FLA rows say "not importable").
# Usage (device machine, repo root): bash scripts/h200_linear_attention.sh [task ...]
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" results/h200
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
if ls .whl-peers/*.whl >/dev/null 2>&1; then
  python3 scripts/install_missing_wheels.py .whl-peers /tmp/site_peers --check fla.ops.gated_delta_rule fla.ops.kda \
    2>&1 | tail -5 | tee "$OUT/wheels_peers.log"
  export PYTHONPATH=$PYTHONPATH:/tmp/site_peers
else
  echo "no .whl-peers/: FLA rows will be skipped" | tee "$OUT/wheels_peers.log"
fi

tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(gdn_decode gdn_prefill kda_prefill)
# seconds per eval: the token-by-token reference runs in every check and timed repetition (~2 s per
# pass over gdn_prefill's or kda_prefill's workloads, estimated, not measured)
declare -A LIMIT=([gdn_decode]=50 [gdn_prefill]=120 [kda_prefill]=120)
for t in "${tasks[@]}"; do
  echo "=== eval $t"
  timeout "${LIMIT[$t]}" python3 -m kernelcraft eval "tasks/$t" --device cuda --budget-ms 100 \
    --json "results/h200/$t.json" 2>&1 | tail -40 | tee "$OUT/$t.log"
  cp "results/h200/$t.json" "$OUT/" 2>/dev/null
done

echo "=== bench"
list=$(IFS=,; echo "${tasks[*]}")
timeout 150 python3 scripts/linear_attention_bench.py --tasks "$list" --json "$OUT/linear_attention_bench.json" \
  > "$OUT/linear_attention_bench.log" 2>&1
echo "bench exit $?"
# the summary the bench prints last (one table per task) and each eval's verdicts, kept aside:
# packing empties $OUT
summary=$(mktemp)
sed -n '/^== /,$p' "$OUT/linear_attention_bench.log" > "$summary"
for t in "${tasks[@]}"; do
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["solutions"]:
    name, status, speedup = s["name"], s["status"], s.get("speedup_vs_baseline")
    print(f"eval {sys.argv[2]:12s} {name:16s} {status:20s} x baseline {speedup}")
' "results/h200/$t.json" "$t" >> "$summary" 2>/dev/null || echo "eval $t: no record" >> "$summary"
done

# at most 8 files come back from $OUT: one archive
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
echo "=== summary"
cat "$summary"
