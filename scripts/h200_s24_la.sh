#!/usr/bin/env bash
# Next session, issue 23 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]
#   command: bash scripts/h200_s24_la.sh          (DEADLINE=550 by default)
# gdn_prefill's candidates/triton_chunk3.py (session 23, never run on a GPU): chunk2 with its one-kernel `_prep`
# (131 us at 8192 x 1 on the H200, 255 registers) split into `_kkt` (gates, Gram, the blocked inverse; S) and `_wu`
# (W, U, qg, kd as 64 x 64 tensor-core products), estimated at 40-50 us together. 1. the fault check of every
# kernel (a synchronize after each launch) at 64, 130 and 8192 tokens; 2. the split profile of chunk3 fused (BV by
# rule, and 32) beside chunk2 fused and FLA on session 23's three workloads; 3. `kernelcraft eval` with every gate,
# FLA in the same run and the confirmation (a GPU candidate promotes only confirmed; CONFIRM=--no-confirm to skip it),
# with the rest of the deadline.
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
V=/tmp/la24; rm -rf $V; mkdir -p $V
python3 scripts/config_variants.py tasks/gdn_prefill/candidates/triton_chunk3.py $V '{"SCAN_SPLIT_O": false}' \
  '{"SCAN_SPLIT_O": false, "BV": 32}' | tee "$OUT/variants.txt"
mv $V/triton_chunk3_v0.py $V/c3_fused.py && mv $V/triton_chunk3_v1.py $V/c3_fused_bv32.py
python3 scripts/config_variants.py tasks/gdn_prefill/candidates/triton_chunk2.py $V '{"SCAN_SPLIT_O": false}' \
  | tee -a "$OUT/variants.txt"
mv $V/triton_chunk2_v0.py $V/fused.py
# session 24's chunk4 (chunk3 + a sequence-parallel recurrence), its serial path fused like the others
[ -f tasks/gdn_prefill/candidates/triton_chunk4.py ] && python3 scripts/config_variants.py \
  tasks/gdn_prefill/candidates/triton_chunk4.py $V '{"SCAN_SPLIT_O": false}' | tee -a "$OUT/variants.txt" \
  && mv $V/triton_chunk4_v0.py $V/c4_fused.py
cp -r $V "$OUT/variants"
for f in ${FAULT:-c3_fused}; do
  timeout 90 python3 scripts/gdn_prefill_fault.py $V/$f.py --lens 64 130 8192 2>&1 | grep -v "Warning\|warn(" \
    | tee -a "$OUT/fault.txt"
done
t0=$(date +%s)
[ -n "${SKIP_SPLIT:-}" ] || timeout 200 python3 scripts/gdn_prefill_split.py --task gdn_prefill --solution $V/c3_fused.py \
  --solution $V/c3_fused_bv32.py --solution $V/fused.py --workloads 32bd0dca,72e2d95a,d790aa8b \
  --out "$OUT/gdn_split.json" 2>&1 | grep -v "Warning\|warn(" | tee "$OUT/gdn_split.txt"
echo "gdn split: $(( $(date +%s) - t0 )) s"
l=$(left)
echo "=== tasks/gdn_prefill ($l s left)"; t0=$(date +%s)
sols=""; for f in ${EVAL:-fused c3_fused}; do sols="$sols $V/$f.py"; done
timeout $(( l - 5 )) python3 -m kernelcraft eval tasks/gdn_prefill $sols --device cuda --peers \
  --budget-ms 50 ${CONFIRM:---confirm} --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
echo "rc $? $(( $(date +%s) - t0 )) s"
grep -v "leaked\|nanobind\|Warning" "$OUT/gdn_prefill.log" | tail -30 | cut -c1-220
echo "=== done in $(( $(date +%s) - start )) s"
[ -n "${NO_PACK:-}" ] || bash scripts/pack_out.sh
