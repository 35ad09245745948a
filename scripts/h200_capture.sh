#!/usr/bin/env bash
# Issue 25 on the H200, one device call (run 2026-12-01: results/h200/capture/, 341 s; the task folders
# were left out then: it did not pack $OUT, fixed; budgeted at ~6 min by the
# per-step timeouts below, the total capped by DEADLINE_S):
#
#   bash scripts/h200_capture.sh
#
# 1. kernelcraft capture of Llama-3-8B-shaped (2 layers) and Qwen3-Next-80B-A3B-shaped (4 layers: three
#    gated delta-net layers, one full attention; 512 experts) decoder stacks, random weights, bf16,
#    prefill 1 x SEQ tokens then decode 1 token after a cache of SEQ, eager and --compile, writing
#    the top regions' task folders (or catalog links) to $OUT/capture/<model>-<mode>/;
# 2. kernelcraft e2e of the exported RMSNorm kernel (KERNEL from RECORD, default cuda_vec8 from the
#    committed results/h200/history-2026-12-01/rmsnorm.json) in the Llama-3-8B stack, eager and compiled, prefill
#    (1 x SEQ) and decode-shaped (8 x 1), to $OUT/e2e_*.json.
#
# Needs, carried in .whl/ (git-ignored): the base wheels AGENTS.md lists and .whl/e2e/ from
# `bash scripts/fetch_e2e_wheels.sh` (transformers 5.24 is pure Python; its dependencies that the
# device lacks are installed from there: huggingface-hub, tokenizers, safetensors, regex, ...).
# A step that runs out of time or fails is logged and the next one runs; $OUT/SUMMARY.txt lists each.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
SEQ=${SEQ:-512}
TOP=${TOP:-5}
DEADLINE_S=${DEADLINE_S:-360}
W=$PWD/.kernelcraft/h200_capture
mkdir -p "$OUT/capture" "$W"
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 scripts/install_missing_wheels.py .whl/e2e /tmp/site_e2e --check transformers transformers.models.llama \
  transformers.models.qwen3_next 2>&1 | tee "$OUT/wheels.log"
[ "${PIPESTATUS[0]}" = 0 ] || exit 1
export PYTHONPATH=/tmp/site_e2e:/tmp/site:$PWD/src
export KERNELCRAFT_CACHE=$W/kc_cache KERNELCRAFT_EXPORT_CACHE=$W/ext_cache TORCHINDUCTOR_CACHE_DIR=$W/inductor
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" \
  | tee "$OUT/versions.txt"

step() {  # step NAME LIMIT_S CMD...: run unless the deadline is near, log, record the outcome
  local name=$1 limit=$2; shift 2
  local left=$(( DEADLINE_S - ($(date +%s) - start) ))
  if [ "$left" -lt 20 ]; then echo "$name: skipped (deadline)" | tee -a "$OUT/SUMMARY.txt"; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc $(( $(date +%s) - t0 ))s (limit ${limit}s)" | tee -a "$OUT/SUMMARY.txt"
  tail -n 30 "$OUT/$name.log"
}

# MODELS / MODES pick a part of the sweep (e.g. MODELS=qwen3-next MODES=eager E2E=0 re-runs one capture);
# CAPTURE=0 runs the export and e2e steps alone
[ "${CAPTURE:-1}" = 1 ] || MODELS_RUN=""
for model in ${MODELS_RUN-${MODELS:-llama3-8b qwen3-next}}; do
  layers=2; [ "$model" = qwen3-next ] && layers=4
  for mode in ${MODES:-eager compile}; do
    if [ "$mode" = eager ]; then
      step "capture_${model}_eager" 90 python3 -m kernelcraft capture "$model" --layers "$layers" --seq "$SEQ" \
        --device cuda --top "$TOP" --iters 5 --out "$OUT/capture/${model}-eager"
    else
      step "capture_${model}_compile" 120 python3 -m kernelcraft capture "$model" --layers "$layers" --seq "$SEQ" \
        --device cuda --top "$TOP" --iters 5 --compile --out "$OUT/capture/${model}-compile"
    fi
  done
done
[ "${E2E:-1}" = 1 ] || { echo "total $(( $(date +%s) - start ))s" | tee -a "$OUT/SUMMARY.txt";
  [ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh; exit 0; }

KERNEL=${KERNEL:-rmsnorm_bf16_h4096_cuda_vec8}
RECORD=${RECORD:-results/h200/history-2026-12-01/rmsnorm.json}  # has rmsnorm_bf16_h4096_cuda_vec8 (the top-level record has not since session 23)
rm -rf "$W/export"
step export 60 python3 -m kernelcraft export "$RECORD" "$W/export" --format torch-op --solution "$KERNEL"
if [ -d "$W/export/src" ]; then
  step e2e_prefill 90 python3 -m kernelcraft e2e --package "$W/export" --model llama3-8b --layers 2 --batch 1 \
    --seq "$SEQ" --phase prefill --device cuda --budget-ms 100 --json "$OUT/e2e_prefill.json"
  step e2e_decode 90 python3 -m kernelcraft e2e --package "$W/export" --model llama3-8b --layers 2 --batch 8 \
    --seq "$SEQ" --phase decode --device cuda --budget-ms 100 --json "$OUT/e2e_decode.json"
fi
echo "total $(( $(date +%s) - start ))s" | tee -a "$OUT/SUMMARY.txt"
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh  # the device tool brings back 8 files; the task folders are more
