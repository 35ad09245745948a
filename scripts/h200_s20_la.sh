#!/usr/bin/env bash
# Session 20, issue 23 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]
#   command: bash scripts/h200_s20_la.sh           (EVALS="gdn kda" by default; EVALS=gdn or EVALS= to skip)
# 1. Where the time goes, kernel by kernel, beside FLA (scripts/gdn_prefill_split.py: torch.profiler, warm L2, a
#    design tool, not a verdict): gdn_prefill's promoted triton_chunk, candidates/triton_chunk2.py (one prep kernel
#    with the blocked 16 x 16 inverse; the output split from the state pass) with SCAN_SPLIT_O on and off;
#    kda_prefill's triton_intra3 at its best measured CONFIG (PREP_WARPS 4, SCAN_STAGES 3) and
#    candidates/triton_intra4.py (intra3 with `_prep`'s inverse by blocked forward substitution) at its CONFIG
#    (4 warps: 211 registers, 2 blocks/SM by Triton 3.6's ptxas, as intra3's 255 at 4 warps), at 4 warps capped at
#    168 (72 B spilled, 3 blocks/SM) and at 8 warps capped at 128 (split only).
# 2. `kernelcraft eval` (every gate, holdouts, FLA in the same run) of the new files beside the old, within the
#    call's deadline: gdn_prefill first (~170 s in session 7), then kda_prefill (~280 s in session 16).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-550} - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
V=/tmp/la_variants; rm -rf $V; mkdir -p $V/gdn $V/kda
python3 scripts/config_variants.py tasks/gdn_prefill/candidates/triton_chunk2.py $V/gdn '{"SCAN_SPLIT_O": false}' \
  '{"PREP_WARPS": 8}' | tee "$OUT/variants.txt"
mv $V/gdn/triton_chunk2_v0.py $V/gdn/triton_chunk2_fused.py
mv $V/gdn/triton_chunk2_v1.py $V/gdn/triton_chunk2_w8.py
python3 scripts/config_variants.py tasks/kda_prefill/candidates/triton_intra3.py $V/kda \
  '{"PREP_WARPS": 4, "SCAN_STAGES": 3}' | tee -a "$OUT/variants.txt"
mv $V/kda/triton_intra3_v0.py $V/kda/triton_intra3_p4s3.py
python3 scripts/config_variants.py tasks/kda_prefill/candidates/triton_intra4.py $V/kda \
  '{"PREP_WARPS": 8, "PREP_MAXNREG": 128}' '{"PREP_MAXNREG": 168}' | tee -a "$OUT/variants.txt"
mv $V/kda/triton_intra4_v0.py $V/kda/triton_intra4_w8r128.py
mv $V/kda/triton_intra4_v1.py $V/kda/triton_intra4_r168.py
cp -r $V "$OUT/variants"
t0=$(date +%s)
timeout $(( $(left) < 160 ? $(left) - 10 : 150 )) python3 scripts/gdn_prefill_split.py --task gdn_prefill --solution tasks/gdn_prefill/solutions/triton_chunk.py \
  --solution tasks/gdn_prefill/candidates/triton_chunk2.py --solution $V/gdn/triton_chunk2_fused.py --solution $V/gdn/triton_chunk2_w8.py \
  --workloads ${GDN_WL:-32bd0dca,b5716bbf,72e2d95a,c3ecd709,d790aa8b} --out "$OUT/gdn_split.json" 2>&1 \
  | grep -v "Warning\|warn(" | tee "$OUT/gdn_split.txt"
echo "gdn split: $(( $(date +%s) - t0 )) s"
[ "$(left)" -lt 100 ] && { echo "=== no time for the kda split ($(left) s left)"; bash scripts/pack_out.sh; exit 0; }
t0=$(date +%s)
timeout $(( $(left) < 150 ? $(left) - 10 : 150 )) python3 scripts/gdn_prefill_split.py --task kda_prefill --solution $V/kda/triton_intra3_p4s3.py \
  --solution tasks/kda_prefill/candidates/triton_intra4.py --solution $V/kda/triton_intra4_w8r128.py \
  --solution $V/kda/triton_intra4_r168.py --workloads 1ca0667f,5f6405ce,8a988d2f \
  --out "$OUT/kda_split.json" 2>&1 | grep -v "Warning\|warn(" | tee "$OUT/kda_split.txt"
echo "kda split: $(( $(date +%s) - t0 )) s"
for e in ${EVALS-gdn kda}; do
  l=$(left); [ "$l" -lt 120 ] && { echo "=== no time for the $e eval ($l s left)"; continue; }
  if [ "$e" = gdn ]; then
    set -- tasks/gdn_prefill tasks/gdn_prefill/solutions/triton_chunk.py tasks/gdn_prefill/candidates/triton_chunk2.py
  else
    set -- tasks/kda_prefill $V/kda/triton_intra3_p4s3.py tasks/kda_prefill/candidates/triton_intra4.py \
      $V/kda/triton_intra4_r168.py
  fi
  echo "=== $1 ($l s left)"; t0=$(date +%s)
  timeout $(( l - 5 )) python3 -m kernelcraft eval "$@" --device cuda --peers --budget-ms 50 --no-confirm \
    --json "$OUT/$(basename "$1").json" > "$OUT/$(basename "$1").log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  grep -v "leaked\|nanobind\|Warning" "$OUT/$(basename "$1").log" | tail -30 | cut -c1-220
done
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
