#!/usr/bin/env bash
# Next session, device call 2, right after scripts/h200_s19_timing_ab.sh (<= 560 s, any one-GPU kind). carry:
# [".whl", ".whl-peers/c1", ".whl-peers/c3", ".kernelcraft/flashinfer-cache"] (~58 MB with the tree; no quack: its
# cutlass-cu13 libraries need three more calls, scripts/h200_s18_call{1,2,3}.sh)
#   command: bash scripts/h200_s19_evals.sh            (KERNELCRAFT_TIMING_BLOCK=1 if the A/B says the blocker
#                                                       removes the bimodal decode samples)
# Every small peer wheel goes into /tmp/site in ONE pip command (session 18: installing the cutlass wheels in two
# `pip --target --upgrade` commands replaced nvidia_cutlass_dsl/ and broke quack's import). Then `kernelcraft eval`
# with static torch.compile and every peer that loads (FlashInfer prebuilt for sm_90a, Liger, FLA, torch) of:
#   rope: triton_tokens (promoted) beside candidates/triton_heads.py and two variants (PIN_LOADS off; 8 heads a
#         program), the head-split decode path, never timed;
#   topk: triton_groupmax_filter beside candidates/triton_bigk.py (the large-k path) when it exists;
#   gelu_tanh_mul: triton_stream {"FAST_MATH": false} (session 18's pick) with confirmation, to make it promotable.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/catalog"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-550} - ($(date +%s) - start) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl/*.whl .whl-peers/c1/*.whl .whl-peers/c3/*.whl > "$OUT/install.txt" 2>&1 || echo "install FAILED (install.txt)"
rm -rf /tmp/fi-cache && cp -r .kernelcraft/flashinfer-cache /tmp/fi-cache
export PYTHONPATH=/tmp/fi-cache:/tmp/site:$PWD/src FLASHINFER_DISABLE_JIT=1 KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
echo "KERNELCRAFT_TIMING_BLOCK=${KERNELCRAFT_TIMING_BLOCK:-0}" | tee "$OUT/timing_block.txt"
V=/tmp/s19v; rm -rf $V; mkdir -p $V/rope $V/gelu
python3 scripts/config_variants.py tasks/rope/candidates/triton_heads.py $V/rope '{"PIN_LOADS": false}' '{"HEADS_PER_PROG": 8}' > "$OUT/variants.txt"
# session 18's pick, named as its record names it (the same file: results/h100/catalog-2026-12-06-s18/judged_sources.json)
python3 scripts/config_variants.py tasks/gelu_tanh_mul/candidates/triton_stream.py $V/gelu '{"FAST_MATH": false}' >> "$OUT/variants.txt"
mv $V/gelu/triton_stream_v0.py $V/gelu/triton_stream_v3.py
declare -A SOLS=(
  [rope]="tasks/rope/solutions/triton_tokens.py tasks/rope/candidates/triton_heads.py $V/rope/triton_heads_v0.py $V/rope/triton_heads_v1.py"
  [topk]="tasks/topk/candidates/triton_groupmax_filter.py $(ls tasks/topk/candidates/triton_bigk.py 2>/dev/null)"
  [gelu_tanh_mul]="$V/gelu/triton_stream_v3.py")
declare -A CONFIRM=([rope]=--no-confirm [topk]=--no-confirm [gelu_tanh_mul]=--confirm)
for t in ${TASKS:-rope topk gelu_tanh_mul}; do
  l=$(left); [ "$l" -lt 60 ] && { echo "=== no time for $t ($l s left)"; continue; }
  echo "=== $t ($l s left): ${SOLS[$t]}"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout $(( l - 5 )) python3 -m kernelcraft eval tasks/$t ${SOLS[$t]} --with-baseline --device cuda --peers \
    --budget-ms ${BUDGET_MS:-100} ${CONFIRM[$t]} --json "$OUT/catalog/$t.json" > "$OUT/catalog/$t.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  grep -v "leaked\|nanobind\|Warning" "$OUT/catalog/$t.log" | grep -B2 -A14 "x best peer" | head -22 | cut -c1-220
  python3 scripts/timing_spread.py "$OUT/catalog/$t.json" --quiet | tail -6
done 2>&1 | tee "$OUT/catalog.txt"
mkdir -p "$OUT/variants" && cp -r $V/* "$OUT/variants/"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
