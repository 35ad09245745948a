#!/usr/bin/env bash
# Session 24's second call (<= 575 s; any one-GPU kind). carry: [".whl", ".whl-peers/c1"]
#   command: bash scripts/h200_s24_call2.sh
# Issue 23's two new candidates, never run on a GPU before: kda_prefill's triton_intra5 (session 24: `_intra` as
# seven one-warp programs with tensor-core diagonal blocks, `_prep` split into `_inv` + `_wu`) and gdn_prefill's
# triton_chunk4 (session 24: chunk3 with a sequence-parallel state recurrence). For each: the split profile beside
# its parent and FLA (torch.profiler, warm L2: a fault shows there as an exception), then `kernelcraft eval` with
# every gate, FLA in the same run and the confirmation.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-570} - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
K=tasks/kda_prefill; G=tasks/gdn_prefill/candidates  # intra5 promoted to solutions/ after this call ran
echo "=== kda_prefill split ($(left) s left)"; t0=$(date +%s)
timeout 130 python3 scripts/gdn_prefill_split.py --task kda_prefill --solution $K/solutions/triton_intra5.py \
  --solution $K/candidates/triton_intra4.py --workloads 1ca0667f,7b308256 --calls 10 --out "$OUT/kda_split.json" 2>&1 \
  | grep -v "Warning\|warn(" | tee "$OUT/kda_split.txt"
echo "kda split: $(( $(date +%s) - t0 )) s"
if [ -f $G/triton_chunk4.py ]; then
  echo "=== gdn_prefill split ($(left) s left)"; t0=$(date +%s)
  timeout 90 python3 scripts/gdn_prefill_fault.py $G/triton_chunk4.py --lens 64 130 8192 2>&1 | grep -v "Warning\|warn(" \
    | tee "$OUT/gdn_fault.txt"
  timeout 120 python3 scripts/gdn_prefill_split.py --task gdn_prefill --solution $G/triton_chunk4.py \
    --solution $G/triton_chunk3.py --workloads 32bd0dca,72e2d95a,d790aa8b --calls 10 --out "$OUT/gdn_split.json" 2>&1 \
    | grep -v "Warning\|warn(" | tee "$OUT/gdn_split.txt"
  echo "gdn split: $(( $(date +%s) - t0 )) s"
fi
for t in kda_prefill gdn_prefill; do
  l=$(left); [ "$l" -lt 60 ] && { echo "=== no time for $t ($l s left)"; continue; }
  if [ $t = kda_prefill ]; then sols="$K/candidates/triton_intra4.py $K/solutions/triton_intra5.py"; lim=$(( l > 300 ? l - 230 : l - 5 ));
  else sols="$G/triton_chunk3.py $G/triton_chunk4.py"; lim=$(( l - 5 )); fi
  [ $t = gdn_prefill ] && [ ! -f $G/triton_chunk4.py ] && continue
  echo "=== tasks/$t ($l s left, limit $lim s)"; t0=$(date +%s)
  timeout $lim python3 -m kernelcraft eval tasks/$t $sols --device cuda --peers --budget-ms 50 ${CONFIRM:---confirm} \
    --json "$OUT/$t.json" > "$OUT/$t.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  grep -v "leaked\|nanobind\|Warning" "$OUT/$t.log" | tail -25 | cut -c1-220
done
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
