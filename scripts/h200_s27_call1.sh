#!/usr/bin/env bash
# Session 27, first call (<= 590 s, any one-GPU kind). `mv results /tmp/kc_results_hold` before it (carry size).
# carry: [".whl", ".whl-peers/c1", ".whl-peers/c3", ".whl-peers/c3q", ".kernelcraft/flashinfer-cache"]
#   command: bash scripts/h200_s27_call1.sh
# On an H200: the catalog's chain call 1 under `--trusted-timing auto` with the confirmation (topk, silu_mul,
# gelu_tanh_mul; scripts/h200_s19_chain1.sh), quack's small wheels installed beside (what chain call 2 did, so that
# call 2 only stashes a cutlass part), session 26's two GPU tests (SKIP_TESTS=1: not; they passed on an H100 in
# session 27), then gdn_prefill's H200 record of $GDN_FILES (default solutions/triton_chunk8.py, promoted after the
# H100's 1.17x under kc-timing/8, session 28; GDN_BUDGET=200 as that run; `kernelcraft eval` with FLA and the
# confirmation). Calls 2-4: scripts/h200_s20_chain{2,3,4}.sh
# (PLACEMENT=0). On anything else (an H100): the two GPU tests, then scripts/gdn_s27_wu.sh (chunk7's `_wu` forms
# split beside chunk6 and FLA, the best judged).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-585} - ($(date +%s) - start) )); }
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $gpu"
TESTS=(tests/test_gpu_measure.py::test_a_numerical_failure_says_whether_the_calls_differed
       tests/test_gpu_measure.py::test_eval_lint_on_a_gpu_compiles_the_gpu_side)
if [[ "$gpu" == *H200* ]] && [ "${GDN_FIRST:-0}" = 1 ]; then
  # device time short: gdn_prefill's H200 record first, then chain call 1's tasks in what is left
  C3Q=1 source scripts/catalog_wheels.sh
  export PYTHONPATH=/tmp/fi-cache:/tmp/site:$PWD/src FLASHINFER_DISABLE_JIT=1 KERNELCRAFT_CACHE=/tmp/kc_cache
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
  GDN=${GDN_FILES:-tasks/gdn_prefill/solutions/triton_chunk8.py}
  l=$(left); echo "=== tasks/gdn_prefill $GDN ($l s left)"; t0=$(date +%s)
  cap=$(( l - 10 )); [ -n "${GDN_CAP:-}" ] && [ "$cap" -gt "$GDN_CAP" ] && cap=$GDN_CAP  # leave the chain's tasks time
  # shellcheck disable=SC2086
  timeout $cap python3 -m kernelcraft eval tasks/gdn_prefill $GDN --device cuda --peers --budget-ms ${GDN_BUDGET:-50} --confirm \
    --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  quiet < "$OUT/gdn_prefill.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -30 | cut -c1-200
  l=$(left)
  if [ "$l" -gt 70 ]; then
    echo "=== chain call 1's tasks ($l s left): ${TASKS:-topk silu_mul gelu_tanh_mul}"
    SKIP_INSTALL=1 CONFIRM=--confirm DEADLINE=$(( l - 10 )) OUT="$OUT/chain1" bash scripts/h200_s19_chain1.sh > "$OUT/chain1.txt" 2>&1
    tail -30 "$OUT/chain1.txt" | cut -c1-200
  fi
  echo "=== done in $(( $(date +%s) - start )) s"
  bash scripts/pack_out.sh
  exit 0
fi
if [[ "$gpu" == *H200* ]] && [ "${FORCE_H100_PLAN:-0}" != 1 ]; then
  echo "=== H200: chain call 1 (topk, silu_mul, gelu_tanh_mul; --confirm)"
  CONFIRM=--confirm DEADLINE=${CHAIN_DEADLINE:-300} OUT="$OUT/chain1" bash scripts/h200_s19_chain1.sh > "$OUT/chain1.txt" 2>&1
  tail -40 "$OUT/chain1.txt" | cut -c1-200  # chain1/out.tgz: its files
  SKIP_INSTALL=1 C3Q=1 source scripts/catalog_wheels.sh  # chain1 filled /tmp/site; quack's small wheels beside
  export PYTHONPATH=/tmp/fi-cache:/tmp/site:$PWD/src FLASHINFER_DISABLE_JIT=1 KERNELCRAFT_CACHE=/tmp/kc_cache
  [ "${SKIP_TESTS:-0}" = 1 ] || { l=$(left); TESTS_S=$(( l < 200 ? l / 2 : 110 )) bash scripts/gpu_tests.sh "${TESTS[@]}"; }
  l=$(left)
  if [ "$l" -gt 90 ]; then
    GDN=${GDN_FILES:-tasks/gdn_prefill/solutions/triton_chunk8.py}
    echo "=== tasks/gdn_prefill $GDN ($l s left)"; t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout $(( l - 10 )) python3 -m kernelcraft eval tasks/gdn_prefill $GDN --device cuda --peers --budget-ms ${GDN_BUDGET:-50} --confirm --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
    echo "rc $? $(( $(date +%s) - t0 )) s"
    quiet < "$OUT/gdn_prefill.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -30 | cut -c1-200
  else
    echo "no time for gdn_prefill ($l s left)"
  fi
  echo "=== done in $(( $(date +%s) - start )) s"
  bash scripts/pack_out.sh
  exit 0
fi
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
export KERNELCRAFT_CACHE=/tmp/kc_cache
TESTS_S=110 bash scripts/gpu_tests.sh "${TESTS[@]}"
l=$(left)
DEADLINE=$(( l - 5 )) OUT="$OUT" bash "${GDN_SCRIPT:-scripts/gdn_s27_wu.sh}"  # scripts/gdn_s27_tb.sh after chunk7
bash scripts/pack_out.sh
