#!/usr/bin/env bash
# Sourced-free helper of scripts/h200_s19_chain{1,3}.sh: `kernelcraft eval` (static torch.compile, every peer that
# loads) of each task in $TASKS with its promoted kernel and the candidates that led on an H100 in sessions 18-19
# (CONFIG variants made here from the files at HEAD, named as their records name them), within $DEADLINE seconds.
# CONFIRM=--confirm: the out-of-process confirmation a promotion needs (session 19 ran --no-confirm).
# BESIDE=--peers-beside: the peers and static torch.compile timed again in each candidate's rotation (session 22).
# TRUSTED="--trusted-timing runner": the baseline, torch.compile and peers timed in runners of their own (session 23).
# Writes $OUT/catalog/<task>.{json,log} and $OUT/catalog.txt.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/catalog"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-500} - ($(date +%s) - start) )); }
P=/tmp/s19picks; rm -rf $P; mkdir -p $P
pick() {  # task file name config
  python3 scripts/config_variants.py "$2" $P/$1 "$4" > /dev/null && mv $P/$1/"$(basename "$2" .py)"_v0.py $P/$1/$3.py
}
pick softmax tasks/softmax/candidates/triton_split.py triton_split_v3 '{"SPLIT_CHUNK": 4096, "SPLIT_ELEMS": 32}'
pick fused_add_rmsnorm tasks/fused_add_rmsnorm/candidates/triton_static.py triton_static_v5 '{"SMALL_PIN": false}'
pick layernorm tasks/layernorm/candidates/triton_onepass.py triton_onepass_v3 '{"SMALL_ELEMS_PER_THREAD": 32}'
pick silu_mul tasks/silu_mul/candidates/triton_stream.py triton_stream_v1 '{"num_warps": 8}'
pick gelu_tanh_mul tasks/gelu_tanh_mul/candidates/triton_stream.py triton_stream_v3 '{"FAST_MATH": false}'
pick rope tasks/rope/candidates/triton_heads.py triton_heads_v0 '{"PIN_LOADS": false}'
cp -r $P "$OUT/picks"
declare -A SOLS=(
  [softmax]="tasks/softmax/solutions/triton_online.py $P/softmax/triton_split_v3.py ${SOFTMAX_EXTRA-}"
  [fused_add_rmsnorm]="tasks/fused_add_rmsnorm/solutions/triton_rowwise.py $P/fused_add_rmsnorm/triton_static_v5.py ${FUSED_EXTRA-}"
  [layernorm]="tasks/layernorm/solutions/triton_dispatch.py $P/layernorm/triton_onepass_v3.py"
  [silu_mul]="tasks/silu_mul/solutions/triton_tiled.py $P/silu_mul/triton_stream_v1.py"
  [gelu_tanh_mul]="tasks/gelu_tanh_mul/solutions/triton_tiled.py $P/gelu_tanh_mul/triton_stream_v3.py"
  [rmsnorm]="tasks/rmsnorm/solutions/triton_rowwise.py"
  [rope]="tasks/rope/solutions/triton_tokens.py $P/rope/triton_heads_v0.py"
  [cross_entropy]="tasks/cross_entropy/solutions/triton_online.py"
  [topk]="tasks/topk/solutions/triton_radix_mc.py tasks/topk/candidates/triton_bigk.py ${TOPK_EXTRA-}")
for t in ${TASKS:?}; do
  l=$(left); [ "$l" -lt 60 ] && { echo "=== no time for $t ($l s left)"; continue; }
  echo "=== $t ($l s left): ${SOLS[$t]}"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout $(( l - 5 )) python3 -m kernelcraft eval tasks/$t ${SOLS[$t]} --with-baseline --device cuda --peers \
    --budget-ms ${BUDGET_MS:-100} ${CONFIRM:---no-confirm} ${BESIDE:-} ${TRUSTED:-} --json "$OUT/catalog/$t.json" > "$OUT/catalog/$t.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  grep -v "leaked\|nanobind\|Warning" "$OUT/catalog/$t.log" | grep -B2 -A12 "x best peer" | head -18 | cut -c1-200
  python3 scripts/timing_spread.py "$OUT/catalog/$t.json" --quiet | tail -4
done 2>&1 | tee -a "$OUT/catalog.txt"
