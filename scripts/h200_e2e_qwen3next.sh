#!/usr/bin/env bash
# Issue 23 on the H200, one device call (not yet run on the device; budgeted by the per-step timeouts
# below, the whole capped by DEADLINE_S=540 s):
#
#   bash scripts/h200_e2e_qwen3next.sh
#
# kernelcraft e2e of the gated delta rule in a Qwen3-Next hybrid stack (preset qwen3-next-tp4:
# Qwen3-Next-80B-A3B's dimensions, its linear-attention heads as one GPU of TP4 holds them, 4 q/k
# heads, 8 value heads, head size 128 -- the gdn tasks' shapes; LAYERS=4: three gated delta-net
# layers and one full-attention layer, 512-expert MoE MLPs; random weights, bf16). The rule calls
# are replaced by kernelcraft's exported gdn_prefill (triton_chunk) and gdn_decode (triton_decode)
# kernels; the stock rows run transformers' torch fallback (--gdn-function torch) and the peer rows
# FLA's functions (--peer fla: flash-linear-attention 0.6.0 from .whl-peers/), so each phase's record
# has: eager (torch fallback), eager+fla, eager+kernels, torch.compile, torch.compile+fla,
# torch.compile+kernels (fullgraph, Inductor), the Amdahl prediction beside the measurement, and the
# adaptation of the model's call to the ops' interface (model.patch.gdn.adaptation).
#   prefill: BATCH_PREFILL x SEQ tokens; decode: BATCH tokens after a cache of SEQ.
# Outputs: $OUT/e2e_qwen3next_{prefill,decode}.json (kc-e2e/2), the logs, SUMMARY.txt; packed as out.tgz.
#
# The kernels: gdn_decode from results/h200/gdn_decode.json (triton_decode_knobs_bybatch PASSED there; DECODE_SOL); gdn_prefill
# from results/h200/gdn_prefill.json when it exists, else evaluated here first (correctness only,
# --no-timing: `kernelcraft export` needs a record in which the solution PASSED, not timings).
# Needs torch >= 2.11 with CUDA, triton, transformers >= 5 with Qwen3-Next (5.17 is there), the base
# wheels in .whl/ (scripts/device_wheels.sh) and .whl-peers/ (fla-core, flash-linear-attention, einops).
# Without FLA the script still runs, the peer rows left out (PEER= to skip them on purpose).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
SEQ=${SEQ:-1024}
BATCH=${BATCH:-8}
BATCH_PREFILL=${BATCH_PREFILL:-1}
LAYERS=${LAYERS:-4}
MODEL=${MODEL:-qwen3-next-tp4}  # e.g. hf:qwen3_next,...,num_experts=64 if compiling 512 experts runs past a step limit
BUDGET_MS=${BUDGET_MS:-100}
DEADLINE_S=${DEADLINE_S:-540}
RECORDS=${RECORDS:-results/h200}
PEER=${PEER-fla}
W=$PWD/.kernelcraft/h200_e2e_qwen3next
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
if ! python3 -c "import transformers.models.qwen3_next" 2>/dev/null; then
  [ -d .whl/e2e ] || { echo "transformers missing and no .whl/e2e (bash scripts/fetch_e2e_wheels.sh)" | tee -a "$OUT/SUMMARY.txt"; exit 1; }
  timeout 60 python3 scripts/install_missing_wheels.py .whl/e2e /tmp/site_e2e --check transformers \
    transformers.models.qwen3_next 2>&1 | tee "$OUT/wheels.log"
fi
export PYTHONPATH=/tmp/site_e2e:/tmp/site:$PWD/src
peer_args=()
if [ -n "$PEER" ]; then
  PEER_WHEELS=${PEER_WHEELS:-.whl-peers/c1}  # carry it: fla-core, flash-linear-attention (+ the small peers)
  if ls "$PEER_WHEELS"/*.whl > /dev/null 2>&1; then
    timeout 60 python3 scripts/install_missing_wheels.py "$PEER_WHEELS" /tmp/site_peers --check fla.ops.gated_delta_rule \
      2>&1 | tail -5 | tee "$OUT/wheels_peers.log"
    export PYTHONPATH=$PYTHONPATH:/tmp/site_peers
  fi
  if python3 -c "import fla.ops.gated_delta_rule" 2>>"$OUT/wheels_peers.log"; then
    peer_args=(--peer "$PEER")
  else
    echo "fla does not import: no peer rows" | tee -a "$OUT/SUMMARY.txt"
  fi
fi
export KERNELCRAFT_CACHE=$W/kc_cache TORCHINDUCTOR_CACHE_DIR=$W/inductor
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
timeout 60 python3 -c "import torch, triton, transformers; print('torch', torch.__version__, 'triton', triton.__version__, \
'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())
try:
    import fla; print('fla', fla.__version__)
except Exception as e: print('fla: not importable', e)" 2>&1 | tee "$OUT/versions.txt"

rm -rf "$W/export"
prefill_record="$RECORDS/gdn_prefill.json"
if [ ! -f "$prefill_record" ]; then  # no H200 record yet: evaluate triton_chunk (correctness, every workload)
  prefill_record="$OUT/gdn_prefill_eval.json"
  step eval_gdn_prefill 150 python3 -m kernelcraft eval tasks/gdn_prefill tasks/gdn_prefill/solutions/triton_chunk.py \
    --device cuda --no-timing --no-calibrate --no-peers --json "$prefill_record"
fi
packages=()
# DECODE_SOL / PREFILL_SOL: the solution exported from each record (it must have PASSED there)
for spec in "gdn_prefill:${PREFILL_SOL:-triton_chunk}:$prefill_record" "gdn_decode:${DECODE_SOL:-triton_decode_knobs_bybatch}:$RECORDS/gdn_decode.json"; do
  IFS=: read -r task sol record <<< "$spec"
  if step "export_$task" 40 python3 -m kernelcraft export "$record" "$W/export/$task" --format torch-op \
       --solution "$sol" --task "tasks/$task"; then
    packages+=(--package "$W/export/$task")
  fi
done
[ ${#packages[@]} -gt 0 ] || { echo "no kernel exported" | tee -a "$OUT/SUMMARY.txt"; exit 1; }

# the stock rows: transformers' torch fallback even though fla imports (transformers would pick FLA's)
common=(--model "$MODEL" --layers "$LAYERS" --device cuda --budget-ms "$BUDGET_MS" --profile-iters 5
        --gdn-function torch "${peer_args[@]}" ${E2E_ARGS:-})  # E2E_ARGS: e.g. --no-compile
# PHASES: which records to make (2026-12-02: decode 83 s; prefill ran past 200 s, no output)
for phase in ${PHASES:-prefill decode}; do
  if [ "$phase" = prefill ]; then
    step e2e_prefill "${PREFILL_S:-200}" python3 -m kernelcraft e2e "${packages[@]}" "${common[@]}" --batch "$BATCH_PREFILL" \
      --seq "$SEQ" --phase prefill --json "$OUT/e2e_qwen3next_prefill.json"
  else
    step e2e_decode "${DECODE_S:-200}" python3 -m kernelcraft e2e "${packages[@]}" "${common[@]}" --batch "$BATCH" \
      --seq "$SEQ" --phase decode --json "$OUT/e2e_qwen3next_decode.json"
  fi
done
