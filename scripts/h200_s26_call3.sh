#!/usr/bin/env bash
# Session 26, call 3 (<= 280 s; meant for an H200: the record results/h200/gdn_prefill.json asks for one).
# carry: [".whl", ".whl-peers/c1"]      command: DEADLINE=230 bash scripts/h200_s26_call3.sh
# 1. session 26's GPU tests (the judge's race line; eval's lint on CUDA inputs; scripts/gpu_tests.sh), any GPU;
# 2. on an H200 only: `kernelcraft eval` of the promoted solutions/triton_chunk6.py with FLA and the confirmation.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-230} - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
TESTS_S=110 bash scripts/gpu_tests.sh tests/test_gpu_measure.py::test_a_numerical_failure_says_whether_the_calls_differed \
  tests/test_gpu_measure.py::test_eval_lint_on_a_gpu_compiles_the_gpu_side
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
[[ "$gpu" == *H200* ]] || { echo "not an H200 ($gpu): no gdn eval"; bash scripts/pack_out.sh; exit 0; }
l=$(left); echo "=== tasks/gdn_prefill solutions/triton_chunk6.py ($l s left)"; t0=$(date +%s)
timeout $(( l - 5 )) python3 -m kernelcraft eval tasks/gdn_prefill tasks/gdn_prefill/solutions/triton_chunk6.py --device cuda \
  --peers --budget-ms 50 --confirm --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
echo "rc $? $(( $(date +%s) - t0 )) s"
grep -v "Warning\|warn(\|leaked\|nanobind" "$OUT/gdn_prefill.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -30 | cut -c1-200
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
