#!/usr/bin/env bash
# Session 9, device call 1 (~400 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s9_call1.sh
# 1. issue 19: benchmarks/harness.py --parts turnaround,throughput with the rotation's stop reason and its
#    unconverged rows per workload (which of candidate / baseline / reference keeps a wall-bound loop going);
# 2. issue 23: `kernelcraft profile` of kda_prefill's triton_chunk at 1 token and at 8192 x 1 (0.19x FLA,
#    unprofiled), then kda_prefill's eval again (the judge's reference cache: FLA's and triton_chunk's
#    correctness phases were 131 and 210 s on 2026-12-02, mostly the same float64 reference calls).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout ${HARNESS_S:-170} python3 benchmarks/harness.py --device cuda --parts turnaround,throughput \
  --out "$OUT/harness.json" > "$OUT/harness.log" 2>&1
echo "harness: rc=$? $(( $(date +%s) - t0 ))s"; grep -E "turnaround|per GPU-minute|cand_" "$OUT/harness.log" | cut -c1-400
for w in 5ab1502f 1ca0667f; do
  t0=$(date +%s)
  timeout 90 python3 -m kernelcraft profile tasks/kda_prefill tasks/kda_prefill/solutions/triton_chunk.py \
    --workload $w --device cuda --out "$OUT/profile_kda_prefill_$w" > "$OUT/profile_kda_prefill_$w.log" 2>&1
  echo "profile $w: rc=$? $(( $(date +%s) - t0 ))s"; grep -v "^$" "$OUT/profile_kda_prefill_$w.log" | tail -30
done
TASKS=kda_prefill KDA_S=${KDA_S:-200} DEADLINE=${KDA_DEADLINE:-210} KC_NO_PACK=1 bash scripts/h200_s7_call3.sh
bash scripts/pack_out.sh
