#!/usr/bin/env bash
# This session's one full device call (issues 19 and 21), in order of what matters most:
# 1. smoke: rmsnorm's Triton candidate through `eval` on the H200 with the baseline and Nsight
#    Compute's confirmation; prints the sandbox and the confirmation; stops the call if it failed;
# 2. the GPU tests of the timer and the integrity gates (tests/test_gpu_measure.py) and rmsnorm's
#    catalog test (tests/test_gpu.py);
# 3. benchmarks/scale.py on the one H200 (40 shuffled silu_mul tuner variants);
# 4. catalog tasks with their peers (torch, liger, fla, quack; FlashInfer's JIT builds do not fit) and
#    the static torch.compile, until the deadline: $OUT/catalog/<task>.json.
# Usage (repo root, device): bash scripts/h200_final.sh; carry .whl and .whl-peers/small.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/catalog"
start=$(date +%s)
DEADLINE=${DEADLINE:-560}
left() { echo $(( DEADLINE - ($(date +%s) - start) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl/*.whl .whl-peers/small/*.whl || exit 1
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD/src
export KERNELCRAFT_CACHE=/tmp/kc_cache
clean() { grep -v "leaked\|nanobind\|skipped rem\|refleaks\|Warning"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
timeout 200 python3 -m kernelcraft eval tasks/rmsnorm tasks/rmsnorm/solutions/triton_rowwise.py --device cuda \
  --with-baseline --no-peers --json "$OUT/smoke_rmsnorm.json" 2>&1 | clean | tail -14 | tee "$OUT/smoke.log"
python3 - "$OUT/smoke_rmsnorm.json" <<'PY' | tee -a "$OUT/smoke.log"
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["solutions"]:
    print(s["name"], s["status"], s.get("gate"), (s.get("reason") or "")[:900])
    print("  sandbox:", json.dumps(s.get("sandbox")))
    print("  confirmation:", json.dumps(s.get("confirmation"))[:900])
sys.exit(0 if any(s["name"] == "triton_rowwise" and s["status"] == "PASSED" for s in r["solutions"]) else 1)
PY
if [ $? -ne 0 ]; then echo "=== smoke failed: stopping"; bash scripts/pack_out.sh; exit 1; fi
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_measure.py \
  "tests/test_gpu.py::test_catalog_passes_on_gpu[rmsnorm]" 2>&1 | tail -12 | tee "$OUT/test_gpu.log"
timeout 120 python3 benchmarks/scale.py --device cuda --workers 1 --candidates 40 --order shuffled --seed 0 \
  --out "$OUT/scale_1gpu.json" 2>&1 | grep -v Warning | head -4 | cut -c1-600 | tee "$OUT/scale.log"
for t in ${TASKS:-rmsnorm softmax silu_mul fused_add_rmsnorm cross_entropy layernorm gelu_tanh_mul rope}; do
  l=$(left); [ "$l" -lt 70 ] && { echo "=== no time for $t"; continue; }
  timeout $(( l - 20 )) python3 -m kernelcraft eval tasks/$t --device cuda --peers --peer torch --peer liger \
    --peer fla --peer quack --budget-ms 100 --json "$OUT/catalog/$t.json" 2>&1 | clean | grep -A30 "x best peer" \
    | head -14 | tee "$OUT/catalog/$t.log"
done
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
