#!/usr/bin/env bash
# Next session, issue 23 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]
#   command: bash scripts/h200_s22_la.sh          (DEADLINE=550 by default; EVAL=0 for the split alone)
# Session 21's split (results/h100/catalog-2026-12-06-s21/la/) left gdn_prefill's recurrence the largest gap at one
# sequence: chunk2's `_hstate` 204 us (fused `_scan` 232) against FLA's h kernel 154 at 8192 x 1, with BV 8 (128
# programs, each loading the whole 64 x 128 W and K tiles of its head per chunk: 8x the tile traffic of FLA's BV 64,
# ~2.6 TB/s of L2 reads at 1.6 us a step). 1. the split of chunk2 fused (`SCAN_SPLIT_O` off) at BV 8 (its rule), 16,
# 32, 64 and split at BV 32 beside FLA on three workloads (8192 x 1, 4096 x 4, 5783 x 128); the JSON is written
# after every workload. 2. `kernelcraft eval` of triton_chunk and chunk2 fused (every gate, FLA in the same run),
# with the rest of the deadline (session 21's 120 s ended inside chunk2's correctness gate).
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
V=/tmp/la22; rm -rf $V; mkdir -p $V
python3 scripts/config_variants.py tasks/gdn_prefill/candidates/triton_chunk2.py $V '{"SCAN_SPLIT_O": false}' \
  '{"SCAN_SPLIT_O": false, "BV": 16}' '{"SCAN_SPLIT_O": false, "BV": 32}' '{"SCAN_SPLIT_O": false, "BV": 64}' \
  '{"BV": 32}' | tee "$OUT/variants.txt"
for i in 0 1 2 3 4; do
  mv $V/triton_chunk2_v$i.py $V/"$(echo fused fused_bv16 fused_bv32 fused_bv64 split_bv32 | cut -d' ' -f$((i + 1)))".py
done
cp -r $V "$OUT/variants"
t0=$(date +%s)
timeout $(( ${EVAL:-1} == 0 ? $(left) - 10 : 230 )) python3 scripts/gdn_prefill_split.py --task gdn_prefill \
  --solution $V/fused.py --solution $V/fused_bv16.py --solution $V/fused_bv32.py --solution $V/fused_bv64.py \
  --solution $V/split_bv32.py --workloads 32bd0dca,72e2d95a,d790aa8b --out "$OUT/gdn_split.json" 2>&1 \
  | grep -v "Warning\|warn(" | tee "$OUT/gdn_split.txt"
echo "gdn split: $(( $(date +%s) - t0 )) s"
if [ "${EVAL:-1}" != 0 ]; then
  l=$(left)
  echo "=== tasks/gdn_prefill ($l s left)"; t0=$(date +%s)
  timeout $(( l - 5 )) python3 -m kernelcraft eval tasks/gdn_prefill tasks/gdn_prefill/solutions/triton_chunk.py \
    $V/fused.py --device cuda --peers --budget-ms 50 --no-confirm --json "$OUT/gdn_prefill.json" \
    > "$OUT/gdn_prefill.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  grep -v "leaked\|nanobind\|Warning" "$OUT/gdn_prefill.log" | tail -30 | cut -c1-220
fi
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
