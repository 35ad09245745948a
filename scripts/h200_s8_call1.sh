#!/usr/bin/env bash
# Session 8, device call 1 (~300 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s8_call1.sh
# 1. scripts/turn_costs.py: the host cost of each piece of a flushed timer turn and of the judge<->runner
#    wire (issue 19: a rotation costs ~2.2 ms since the split, ~1.1 ms before it);
# 2. the rmsnorm wrong fixtures on the GPU (issue 20's numpy_no_kernel fix, CPU-verified only);
# 3. scripts/gdn_prefill_split.py: triton_chunk's kernels beside FLA's (issue 23, 0.70x FLA), and
#    `kernelcraft profile` of triton_chunk at 4096 x 4 and 8192 x 1 (Nsight Compute: what limits it).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout 90 python3 scripts/turn_costs.py --device cuda --out "$OUT/turn_costs.json" > "$OUT/turn_costs.log" 2>&1
echo "turn_costs: rc=$? $(( $(date +%s) - t0 ))s"; cat "$OUT/turn_costs.log" | tail -30
OUT=$OUT TESTS_S=110 bash scripts/gpu_tests.sh "tests/test_gpu.py::test_wrong_fixtures_caught_on_gpu[rmsnorm]"
t0=$(date +%s)
timeout 120 python3 scripts/gdn_prefill_split.py --out "$OUT/gdn_prefill_split.json" > "$OUT/gdn_prefill_split.log" 2>&1
echo "gdn split: rc=$? $(( $(date +%s) - t0 ))s"; grep -v "Warning\|warn" "$OUT/gdn_prefill_split.log" | tail -45
for w in 72e2d95a 32bd0dca; do
  t0=$(date +%s)
  timeout 100 python3 -m kernelcraft profile tasks/gdn_prefill tasks/gdn_prefill/solutions/triton_chunk.py \
    --workload $w --device cuda --out "$OUT/profile_gdn_prefill_$w" > "$OUT/profile_gdn_prefill_$w.log" 2>&1
  echo "profile $w: rc=$? $(( $(date +%s) - t0 ))s"; tail -40 "$OUT/profile_gdn_prefill_$w.log"
done
bash scripts/pack_out.sh
