#!/usr/bin/env bash
# Session 7, device call 3 (~540 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s7_call3.sh
# Issue 23: the prefill tasks on the H200 with FLA 0.6.0 as the peer, timed (budget 100 ms, --no-confirm as the
# catalog's 2026-12-01 records): gdn_prefill (contest shapes, 1-8192 tokens) and kda_prefill (Kimi-Linear
# shapes); the baseline, FLA's chunk kernels and triton_chunk. The references are float64 token by token (5 ops
# a token: ~40 s of reference per eval estimated from CPU, never measured here) -> $OUT/<task>.json (+ .log).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PACK=$([ "${KC_NO_PACK:-0}" = 1 ] && echo 0 || echo 1)  # the caller's say, before this script's own setting
export KC_NO_PACK=1
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
python3 -c "import fla; print('fla', fla.__version__)" 2>&1 | tail -1
export KERNELCRAFT_CACHE=/tmp/kc_cache
start=$(date +%s)
left() { echo $(( ${DEADLINE:-550} - ($(date +%s) - start) )); }
declare -A LIMIT=([gdn_prefill]=${GDN_S:-300} [kda_prefill]=${KDA_S:-240})
for t in ${TASKS:-gdn_prefill kda_prefill}; do
  l=$(left); [ "$l" -lt 40 ] && { echo "=== no time for $t"; continue; }
  lim=${LIMIT[$t]}; [ "$lim" -gt "$l" ] && lim=$l
  echo "=== $t (limit $lim s)"
  t0=$(date +%s)
  timeout "$lim" python3 -m kernelcraft eval tasks/$t --device cuda --peers --budget-ms 100 --no-confirm \
    --json "$OUT/$t.json" > "$OUT/$t.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  grep -v "leaked\|nanobind\|Warning" "$OUT/$t.log" | tail -30
done 2>&1 | tee "$OUT/prefill.txt"
if [ "$PACK" = 1 ]; then bash scripts/pack_out.sh; fi
