#!/usr/bin/env bash
# Issue 19 on the H200, one device call: the judge/runner split with the runner's sandbox on a GPU.
# 1. smoke: one honest Triton candidate (rmsnorm) through `eval` with the baseline and Nsight Compute's
#    confirmation; prints the sandbox that held and the confirmation, stops here if the candidate failed;
# 2. the GPU tests of the gauntlet and the timer (tests/test_gpu.py for rmsnorm and softmax, test_gpu_measure.py);
# 3. benchmarks/scale.py on one H200 (the pool's throughput against results/h200x2/scale.json's 1-GPU figure);
# 4. benchmarks/harness.py's turnaround figures.
# Usage (device machine, repo root): bash scripts/h200_split.sh   (needs .whl/); results in $OUT.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
start=$(date +%s)
DEADLINE=${DEADLINE:-560}
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
timeout 240 python3 -m kernelcraft eval tasks/rmsnorm tasks/rmsnorm/solutions/triton_rowwise.py --device cuda \
  --with-baseline --no-peers --json "$OUT/smoke_rmsnorm.json" 2>&1 | grep -v "leaked\|nanobind\|skipped rem\|refleaks" \
  | tail -30 | tee "$OUT/smoke.log"
python3 - "$OUT/smoke_rmsnorm.json" <<'PY' | tee -a "$OUT/smoke.log"
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["solutions"]:
    print(s["name"], s["status"], s.get("gate"), (s.get("reason") or "")[:600])
    print("  sandbox:", json.dumps(s.get("sandbox")))
    print("  confirmation:", json.dumps(s.get("confirmation"))[:1500])
ok = any(s["name"] == "triton_rowwise" and s["status"] == "PASSED" for s in r["solutions"])
sys.exit(0 if ok else 1)
PY
smoke=$?
if [ $smoke -ne 0 ]; then
  echo "=== smoke failed: stopping (runner log tails above)"; bash scripts/pack_out.sh; exit 1
fi
timeout $(( $(left) - 330 )) python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "rmsnorm or softmax" \
  tests/test_gpu_measure.py 2>&1 | tail -15 | tee "$OUT/test_gpu.log"
[ "$(left)" -gt 200 ] && timeout 180 python3 benchmarks/scale.py --device cuda --workers 1 --candidates 40 \
  --order shuffled --seed 0 --out "$OUT/scale_1gpu.json" 2>&1 | grep -v Warning | tail -6 | tee "$OUT/scale.log"
[ "$(left)" -gt 100 ] && timeout $(( $(left) - 20 )) python3 benchmarks/harness.py --device cuda \
  --out "$OUT/harness.json" 2>&1 | tail -12 | tee "$OUT/harness.log"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
