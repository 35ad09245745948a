#!/usr/bin/env bash
# Issue 20 part 4 on the H200: the holdout past 2^31 elements (int32 offsets) and the stress inputs
# with real kernels. 1) tests/test_holdouts.py on the GPU (the gpu-marked int32 test included);
# 2) catalog II's cross_entropy and topk (the two tasks whose constraints reach 2^31 elements) and
# softmax / rmsnorm evaluated with their solutions: every holdout, the int32-overflow one and the
# stress- workloads must pass. Records to $OUT.
# Usage (device machine, repo root): bash scripts/h200_holdouts.sh
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia-smi.txt"
timeout 900 python3 -m pytest -q tests/test_holdouts.py 2>&1 | tee "$OUT/test_holdouts.log"
for t in cross_entropy topk softmax rmsnorm; do
  echo "=== $t"
  timeout 600 python3 -m kernelcraft eval "tasks/$t" tasks/$t/solutions/*.py --device cuda --no-timing \
    --json "$OUT/holdouts_$t.json" 2>&1 | tail -20 | tee "$OUT/holdouts_$t.log"
  python3 - "$OUT/holdouts_$t.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["solutions"]:
    print(s["name"], s["status"], s.get("reason", "")[:200])
    for h in s["holdouts"]:
        print("   ", h["uuid"], h["axes"], h["status"], h.get("max_abs_error"))
PY
done
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
