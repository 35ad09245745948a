#!/usr/bin/env bash
# One device call for issue 24's GPU side (nothing here was run on a GPU when it was written):
# eval on CUDA still times by default, the per-phase progress lines come through the GPU lanes
# (run_job's on_phase with three jobs per lane), the latency table names the solutions apart, and
# review's replay command (ledger:ID) runs. Usage (device machine, repo root): bash scripts/h200_first_hour.sh
# Expected: eval.log has "  <solution>: build", "correctness", "holdouts", "timing" lines for each
# candidate, a latency table headed cuda_cubin / cuda_vec8 / triton_dps / triton_rowwise /
# triton_tunable, no "baseline.py" column, record.json's timing_note "" and speedups > 0;
# replay.log ends with a table holding the replayed candidate PASSED; gpu.log: tests/test_gpu.py -k rmsnorm passes.
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
timeout 240 python3 -m kernelcraft eval tasks/rmsnorm --device cuda --json "$OUT/record.json" > "$OUT/eval.log" 2>&1
python3 - "$OUT/record.json" <<'PY' | tee "$OUT/check.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print("timing_note:", repr(r.get("timing_note")))
for s in r["solutions"]:
    print(s["name"], s["status"], s["speedup_vs_baseline"], "promotable" if s["promotable"] else "-", sorted(s["phases_s"]))
PY
db=sqlite:////tmp/kc_first_hour.db
timeout 200 python3 -m kernelcraft optimize tasks/rmsnorm --agent tuner --budget 2 --device cuda --db "$db" \
  > "$OUT/optimize.log" 2>&1
cmd=$(python3 -m kernelcraft review 2 --db "$db" | grep '^kernelcraft eval ' | sed 's/   #.*//')
echo "$cmd" > "$OUT/replay.log"
timeout 120 python3 -m $cmd >> "$OUT/replay.log" 2>&1
timeout 280 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k rmsnorm > "$OUT/gpu.log" 2>&1
tail -3 "$OUT/gpu.log"
