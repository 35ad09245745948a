#!/usr/bin/env bash
# Session 17, device call "sweep" (~300 s; a design tool, never a verdict). carry: [".whl", ".whl-peers/c1",
# ".whl-peers/parts/<libs-cu13>.part-01"]   command: bash scripts/h200_s17_sweep.sh
# Stashes the second part of the cutlass-cu13 wheel for the next call (scripts/peer_wheels.sh), installs Liger and
# FLA (.whl-peers/c1), then times issue 21's new candidates and their CONFIG variants beside the promoted kernel,
# the peers that load (scripts/catalog_sweep.py --no-compile: a compile per shape costs 5-15 s; the evals call has it), at the workloads issue 21's targets
# judge. Writes $OUT/sweep_<task>.json and keeps a copy in /tmp/sweep for the next call's picks.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/sweep
source scripts/device_wheels.sh
source scripts/peer_wheels.sh stash >/dev/null
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
V=/tmp/variants; rm -rf $V; mkdir -p $V
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
  '{"CHUNK_WARPS": 4}' '{"CHUNK": 1024}' '{"CHUNK_BLOCK_M": 2}' '{"CHUNK": 4096, "CHUNK_WARPS": 16}' '{"SMALL_PIN": false}' \
  '{"LARGE": "rows", "PERSIST": 1, "ELEMS_PER_THREAD": 4, "MAX_WARPS": 32}'
variants layernorm tasks/layernorm/candidates/triton_onepass.py '{"PIN_LOADS": false}' '{"STATS": "twopass"}' \
  '{"SMALL_ELEMS_PER_THREAD": 8, "SMALL_MAX_WARPS": 32}' '{"SMALL_ELEMS_PER_THREAD": 32}' '{"SMALL_ELEMS_PER_THREAD": 8}' \
  '{"PIN_LOADS": false, "STATS": "twopass"}'
declare -A PROMOTED=([softmax]=triton_online.py [silu_mul]=triton_tiled.py [gelu_tanh_mul]=triton_tiled.py
  [fused_add_rmsnorm]=triton_rowwise.py [layernorm]=triton_dispatch.py)
for t in ${TASKS:-softmax silu_mul gelu_tanh_mul fused_add_rmsnorm layernorm}; do
  [ -d $V/$t ] || continue
  t0=$(date +%s)
  timeout ${SWEEP_S:-100} python3 scripts/catalog_sweep.py tasks/$t tasks/$t/solutions/${PROMOTED[$t]} $V/$t --no-compile \
    --json "$OUT/sweep_$t.json" > "$OUT/sweep_$t.log" 2>&1
  echo "== $t: rc=$? $(( $(date +%s) - t0 ))s"
  cp "$OUT/sweep_$t.json" /tmp/sweep/ 2>/dev/null
  sed -n '/^== /,$p' "$OUT/sweep_$t.log" | cut -c1-400
  grep -E "left out|Error|error" "$OUT/sweep_$t.log" | head -5 | cut -c1-300
done
cp -r $V /tmp/sweep/variants
bash scripts/pack_out.sh
