#!/usr/bin/env bash
# Session 16, device call 2 (~420 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s16_call2.sh
# Issue 23, kda_prefill (triton_intra3 0.71x FLA, target >= 1.3x):
# 1. `kernelcraft profile` of candidates/triton_intra3.py at 8192 x 1 (workload 1ca0667f): which of its five kernels
#    leads now that `_gate` is lean (triton_intra2's profile: _prep 878, _intra 842, _gate 598, _scan 561 us).
# 2. A CONFIG sweep of triton_intra3 beside FLA's chunk_kda (scripts/linear_attention_bench.py on a copy of the task
#    whose solutions/ holds the variants: checked against the float64 reference under the contract, graph-replay and
#    do_bench medians, L2 flushed). A design tool: a pick goes through `kernelcraft eval` before any claim.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
t0=$(date +%s)
timeout ${PROF_S:-150} python3 -m kernelcraft profile tasks/kda_prefill tasks/kda_prefill/candidates/triton_intra3.py \
  --workload 1ca0667f --device cuda --out "$OUT/profiles/intra3_1ca0667f" > "$OUT/profile.log" 2>&1
echo "profile: rc=$? $(( $(date +%s) - t0 ))s"; grep -v "Warning" "$OUT/profile.log" | tail -40 | cut -c1-300
T=/tmp/kda_sweep; rm -rf $T; mkdir -p $T; cp -r tasks/kda_prefill $T/; rm -rf $T/kda_prefill/solutions/*
python3 scripts/config_variants.py tasks/kda_prefill/candidates/triton_intra3.py $T/kda_prefill/solutions \
  '{}' '{"OUT_BV": 128}' '{"OUT_BV": 32}' '{"BV": 32}' '{"BV": 64}' '{"PREP_WARPS": 4}' '{"INTRA_WARPS": 8, "INTRA_MAXNREG": 0}' \
  '{"SCAN_WARPS": 8}' '{"GATE_BK": 128, "GATE_BC": 32}' '{"SCAN_STAGES": 3}' | tee "$OUT/kda_variants.txt"
t0=$(date +%s)
timeout ${SWEEP_S:-240} python3 scripts/linear_attention_bench.py --tasks kda_prefill --tasks-dir $T --no-stress \
  --json "$OUT/kda_sweep.json" > "$OUT/kda_sweep.log" 2>&1
echo "sweep: rc=$? $(( $(date +%s) - t0 ))s"; grep -v "Warning\|leaked" "$OUT/kda_sweep.log" | tail -60 | cut -c1-250
bash scripts/pack_out.sh
