#!/usr/bin/env bash
# Session 33 (<= 590 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1", ".whl-diag"]
#   command: DEADLINE=575 bash scripts/la_s33.sh
# kda_prefill, issue 23:
# 1. the split at 8192 x 1 (scripts/gdn_prefill_split.py --task kda_prefill: torch.profiler, warm L2, device us per
#    kernel) of intra7, intra8 (no `_gate` launch: `_intra` and `_wu` rebuild the decay from `a`), intra8 with
#    INTRA_FROM_A False (`_gate` kept for `_intra` only) and intra8 with WU_MAXNREG 0, beside FLA's chunk_kda; at most
#    SPLIT_S (150) s: which of intra8's two moves pays, before any verdict (SPLIT_S=0: no split).
# 2. `kernelcraft eval tasks/kda_prefill <intra7> <intra8> --peers --budget-ms 200 --confirm` (both FLA peers, the
#    judge/runner split, Nsight Compute's confirmation) with the rest, under scripts/dump_stacks.sh.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-575} - ($(date +%s) - start) )); }
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
pip install -q --no-index --target /tmp/pyspy .whl-diag/py_spy-*.whl > "$OUT/pyspy.log" 2>&1; export PATH=/tmp/pyspy/bin:$PATH
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
C=tasks/kda_prefill/candidates
V=/tmp/kda_v; rm -rf $V; mkdir -p $V
python3 scripts/config_variants.py $C/triton_intra8.py $V '{"INTRA_FROM_A": false}' '{"WU_MAXNREG": 0}' | tee "$OUT/variants.txt"
mv $V/triton_intra8_v0.py $V/intra8_gate_for_intra.py; mv $V/triton_intra8_v1.py $V/intra8_wu_nocap.py
cp -r $V "$OUT/variants"
if [ "${SPLIT_S:-150}" -gt 0 ]; then
  echo "=== split at 8192 x 1 ($(left) s left)"; t0=$(date +%s)
  timeout "${SPLIT_S:-150}" python3 scripts/gdn_prefill_split.py --task kda_prefill --workloads 1ca0667f --calls 20 \
    --solution $C/triton_intra7.py --solution $C/triton_intra8.py --solution $V/intra8_gate_for_intra.py \
    --solution $V/intra8_wu_nocap.py --out "$OUT/kda_split.json" > "$OUT/kda_split.txt" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/kda_split.txt" | tail -60 | cut -c1-160
fi
lim=$(( $(left) - 15 ))
echo "=== eval intra7 intra8 beside both peers (limit $lim s)"; t0=$(date +%s)
AT=$(( lim - 20 )) FILE="$OUT/stacks_kda.txt" bash scripts/dump_stacks.sh "$lim" python3 -m kernelcraft eval \
  tasks/kda_prefill $C/triton_intra7.py $C/triton_intra8.py --device cuda --peers --budget-ms "${BUDGET:-200}" \
  --confirm --json "$OUT/kda_prefill.json" > "$OUT/kda_prefill.log" 2>&1
echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/kda_prefill.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -40 | cut -c1-200
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
