#!/usr/bin/env bash
# Part of scripts/h200_s18_call2.sh (device side; PYTHONPATH already set): the design sweep of issue 21's new
# candidates (the CONFIG variants session 17 swept on the H100) beside the promoted kernel and the peers named in
# SWEEP_PEERS, with scripts/catalog_sweep.py (--no-compile: a compile per shape costs 5-15 s; the evals have it).
# Writes $OUT/sweep_<task>.json|log; copies them and the variant files to /tmp/sweep for the evals' picks.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/sweep
V=/tmp/sweep/variants; rm -rf $V; mkdir -p $V
variants() {  # task file json...: the file itself and one file per CONFIG override, in $V/<task>
  local task=$1 file=$2; shift 2
  mkdir -p $V/$task; cp "$file" $V/$task/
  [ $# -gt 0 ] && python3 scripts/config_variants.py "$file" $V/$task "$@" > /dev/null
}
variants softmax tasks/softmax/candidates/triton_split.py '{"PREFETCH": 1, "STREAM_PER_SM": 1}' '{"STREAM_WARPS": 16}' \
  '{"STREAM_WARPS": 8}' '{"SPLIT_CHUNK": 4096, "SPLIT_ELEMS": 32}' '{"SPLIT_MAX_ROWS": 1}'
for t in silu_mul gelu_tanh_mul; do
  variants $t tasks/$t/candidates/triton_stream.py '{"BLOCK_N": 1024}' '{"num_warps": 8}' \
    '{"BLOCK_N": 4096, "num_warps": 8, "FIT_N": false}' '{"FAST_MATH": false}' '{"LOAD_EVICT": "evict_first"}' \
    '{"LOAD_CACHE": ".cg", "STORE_CACHE": ".cs"}' '{"PERSIST": 16}'
done
variants fused_add_rmsnorm tasks/fused_add_rmsnorm/candidates/triton_static.py '{"PREFETCH2": false}' \
  '{"CHUNK_WARPS": 4}' '{"CHUNK": 1024}' '{"CHUNK_BLOCK_M": 2}' '{"CHUNK": 4096, "CHUNK_WARPS": 16}' '{"SMALL_PIN": false}'
variants layernorm tasks/layernorm/candidates/triton_onepass.py '{"PIN_LOADS": false}' '{"STATS": "twopass"}' \
  '{"SMALL_ELEMS_PER_THREAD": 8, "SMALL_MAX_WARPS": 32}' '{"SMALL_ELEMS_PER_THREAD": 32}' '{"SMALL_ELEMS_PER_THREAD": 8}'
declare -A PROMOTED=([softmax]=triton_online.py [silu_mul]=triton_tiled.py [gelu_tanh_mul]=triton_tiled.py
  [fused_add_rmsnorm]=triton_rowwise.py [layernorm]=triton_dispatch.py)
for t in ${SWEEP_TASKS:-silu_mul gelu_tanh_mul softmax fused_add_rmsnorm layernorm}; do
  t0=$(date +%s)
  timeout ${SWEEP_S:-60} python3 scripts/catalog_sweep.py tasks/$t tasks/$t/solutions/${PROMOTED[$t]} $V/$t --no-compile \
    --peers "${SWEEP_PEERS:-liger,fla,flashinfer,torch}" --json "$OUT/sweep_$t.json" > "$OUT/sweep_$t.log" 2>&1
  echo "== sweep $t: rc=$? $(( $(date +%s) - t0 ))s"
  cp "$OUT/sweep_$t.json" /tmp/sweep/ 2>/dev/null
  sed -n '/^== /,$p' "$OUT/sweep_$t.log" | cut -c1-300 | head -30
  grep -E "left out|Error|error" "$OUT/sweep_$t.log" | head -5 | cut -c1-300
done
