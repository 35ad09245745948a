#!/usr/bin/env bash
# Next session's first device call (<= 330 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]
#   command: bash scripts/h200_s19_timing_ab.sh
# Why: session 18's H100 records (results/h100/catalog-2026-12-06-s18/) time 96 of 651 rows under 20 us with
# p75/p25 > 1.3 (none of 464 rows over 50 us): bimodal samples whose medians move 2x between identical runs
# (rmsnorm batch 1, Liger: 0.0048 / 0.0129 / 0.0054 ms in three runs). Trusted rows (the judge's process, timed
# first, while later jobs build) are disturbed 3x as often as candidates (20% vs 6%). Hypotheses: host gaps
# (the timed thread late to enqueue the replay after the start event, CPU taken by concurrent builds:
# Inductor workers, cutlass DSL) or SM clocks low after idle (nvidia-smi showed 345 MHz between runs).
# The same rmsnorm eval (Liger + FLA + torch peers, torch.compile, the promoted kernel, and Liger's peer code as
# a candidate: an A/A row) four ways: default; --no-overlap (no build beside a timing); KERNELCRAFT_TIMING_BLOCK=1
# (the spin kernel holds the stream until the turn is enqueued); both. SM clocks logged every 20 ms throughout.
# Read: per row p75/p25 and median per mode (scripts/timing_spread.py), and the A/A row against peer:liger.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_install.txt" 2>&1 || echo "peer install FAILED"
export KERNELCRAFT_CACHE=/tmp/kc_cache
python3 scripts/aa_candidate.py tasks/rmsnorm/peers/liger.py /tmp/aa/aa_liger.py
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 20 > "$OUT/clocks.csv" 2>&1 &
smi=$!
run() {  # name, extra args...; env set by the caller
  local name=$1; shift
  local l=$(( ${DEADLINE:-320} - ($(date +%s) - start) ))
  [ "$l" -lt 50 ] && { echo "== $name: no time ($l s left)"; return; }
  local t0=$(date +%s)
  echo "$name $(date +%s.%N)" >> "$OUT/marks.txt"
  timeout $(( l - 5 )) python3 -m kernelcraft eval tasks/rmsnorm tasks/rmsnorm/solutions/triton_rowwise.py /tmp/aa/aa_liger.py \
    --with-baseline --device cuda --peers --budget-ms 100 --no-confirm "$@" --json "$OUT/rmsnorm_$name.json" \
    > "$OUT/rmsnorm_$name.log" 2>&1
  echo "== $name: rc=$? $(( $(date +%s) - t0 )) s"
  python3 scripts/timing_spread.py "$OUT/rmsnorm_$name.json" --max-ms 0.02 | tail -12
}
run default
run no_overlap --no-overlap
KERNELCRAFT_TIMING_BLOCK=1 run block
KERNELCRAFT_TIMING_BLOCK=1 run block_no_overlap --no-overlap
kill $smi 2>/dev/null
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
