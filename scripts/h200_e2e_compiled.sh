#!/usr/bin/env bash
# Issue 25 on the H200, one device call (not yet run on the device; budgeted by the per-step timeouts
# below, the whole capped by DEADLINE_S=330 s, under the 6 minutes the lead allows):
#
#   bash scripts/h200_e2e_compiled.sh
#
# kernelcraft e2e of three exported Triton kernels in a Llama-3-8B-shaped stack (2 layers, random
# weights, bf16): rmsnorm (triton_rowwise), fused residual add + RMSNorm (triton_rowwise: the whole
# `hidden = residual + x; rmsnorm(hidden)` region, layers restructured so each norm does the add
# before it) and silu_mul (triton_tiled, gate and up projections merged), exported from the committed
# H200 records (RECORDS=results/h200 by default). Eager and torch.compile(fullgraph=True, Inductor),
# prefill (1 x SEQ tokens) and decode (BATCH tokens, one per sequence, after a KV cache of SEQ):
# $OUT/e2e_prefill.json and $OUT/e2e_decode.json (kc-e2e/2: Amdahl beside the measurement, the fusion
# verdict, and why when compiled-with-kernels is slower), their logs, SUMMARY.txt; packed as out.tgz.
#
# Needs torch >= 2.11 with CUDA, Triton, transformers >= 5 importable on the device (5.17 is there),
# and the base wheels AGENTS.md lists in .whl/ (pydantic, SQLAlchemy, alembic, ...: kernelcraft's
# imports). .whl/e2e/ (scripts/fetch_e2e_wheels.sh) is used only if transformers is missing.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
SEQ=${SEQ:-512}
BATCH=${BATCH:-8}
BUDGET_MS=${BUDGET_MS:-100}
DEADLINE_S=${DEADLINE_S:-330}
RECORDS=${RECORDS:-results/h200}
W=$PWD/.kernelcraft/h200_e2e_compiled
mkdir -p "$OUT" "$W"
start=$(date +%s)

step() {  # step NAME LIMIT_S CMD...: run unless the deadline is near, log, record the outcome
  local name=$1 limit=$2; shift 2
  local left=$(( DEADLINE_S - ($(date +%s) - start) ))
  if [ "$left" -lt 20 ]; then echo "$name: skipped (deadline)" | tee -a "$OUT/SUMMARY.txt"; return 1; fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc $(( $(date +%s) - t0 ))s (limit ${limit}s)" | tee -a "$OUT/SUMMARY.txt"
  tail -n 40 "$OUT/$name.log"
  return $rc
}

finish() {
  echo "total $(( $(date +%s) - start ))s" | tee -a "$OUT/SUMMARY.txt"
  [ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
}
trap finish EXIT

if ls .whl/*.whl > /dev/null 2>&1; then
  timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || { echo "base wheels: install failed" | tee -a "$OUT/SUMMARY.txt"; exit 1; }
fi
export PYTHONPATH=/tmp/site
if ! python3 -c "import transformers.models.llama" 2>/dev/null; then
  [ -d .whl/e2e ] || { echo "transformers missing and no .whl/e2e (bash scripts/fetch_e2e_wheels.sh)" | tee -a "$OUT/SUMMARY.txt"; exit 1; }
  timeout 60 python3 scripts/install_missing_wheels.py .whl/e2e /tmp/site_e2e --check transformers transformers.models.llama \
    2>&1 | tee "$OUT/wheels.log"
fi
export PYTHONPATH=/tmp/site_e2e:/tmp/site:$PWD/src
export KERNELCRAFT_CACHE=$W/kc_cache TORCHINDUCTOR_CACHE_DIR=$W/inductor
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
timeout 60 python3 -c "import torch, triton, transformers; print('torch', torch.__version__, 'triton', triton.__version__, \
'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())" 2>&1 | tee "$OUT/versions.txt"

rm -rf "$W/export"
packages=()
for spec in rmsnorm:triton_rowwise fused_add_rmsnorm:triton_rowwise silu_mul:triton_tiled; do
  task=${spec%%:*} sol=${spec#*:}
  if step "export_$task" 40 python3 -m kernelcraft export "$RECORDS/$task.json" "$W/export/$task" --format torch-op \
       --solution "$sol" --task "tasks/$task"; then
    packages+=(--package "$W/export/$task")
  fi
done
[ ${#packages[@]} -gt 0 ] || { echo "no kernel exported" | tee -a "$OUT/SUMMARY.txt"; exit 1; }

common=(--model llama3-8b --layers 2 --device cuda --budget-ms "$BUDGET_MS" --profile-iters 5)
step e2e_prefill 150 python3 -m kernelcraft e2e "${packages[@]}" "${common[@]}" --batch 1 --seq "$SEQ" \
  --phase prefill --json "$OUT/e2e_prefill.json"
step e2e_decode 140 python3 -m kernelcraft e2e "${packages[@]}" "${common[@]}" --batch "$BATCH" --seq "$SEQ" \
  --phase decode --json "$OUT/e2e_decode.json"
