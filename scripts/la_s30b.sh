#!/usr/bin/env bash
# Session 30, second form (<= 590 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]
#   command: DEADLINE=555 bash scripts/la_s30b.sh
# scripts/la_s30.sh's first call (H100, 15:16 UTC) timed the short sweep with do_bench only, which reads the host
# at a few tokens (FLA's chunked GDN 691 us there, 0.028 ms in the eval's graph replays), and its two evals of two
# solutions beside both peers ran out of time (141 s, 215 s). Here: the crossover from device time
# (scripts/la_short_sweep.py's graph replays: the promoted solution against the candidate at RECUR_MAX_T 64, the
# `_recur` tile now BV 8, beside both FLA peers), then each candidate's eval alone beside the peers
# (SKIP_SWEEP=1, GDN_FILES / KDA_FILES / KDA_RESERVE as la_s30.sh).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-555} - ($(date +%s) - start) )); }
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
SHAPES=${SHAPES:-1x1,8x1,16x1,32x1,64x1,128x1,16x4,64x8}
if [ "${SKIP_SWEEP:-0}" != 1 ]; then
  source scripts/device_wheels.sh
  PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
  export KERNELCRAFT_CACHE=/tmp/kc_cache
  for spec in "gdn_prefill tasks/gdn_prefill/solutions/triton_chunk8.py tasks/gdn_prefill/solutions/triton_chunk10.py" \
              "kda_prefill tasks/kda_prefill/solutions/triton_intra5.py tasks/kda_prefill/candidates/triton_intra7.py"; do
    set -- $spec
    echo "=== graph sweep: $1 ($(left) s left)"
    timeout "${SWEEP_S:-60}" python3 scripts/la_short_sweep.py --task "$1" --shapes "$SHAPES" --rep 20 --samples 25 \
      --impl "promoted=$2" --impl "r64=$3:{\"RECUR_MAX_T\": 64}" --out "$OUT/graph_$1.json" 2>&1 | quiet | cut -c1-200
  done
fi
SKIP_SWEEP=1 DEADLINE=$(left) OUT="$OUT" \
  GDN_FILES=${GDN_FILES:-tasks/gdn_prefill/solutions/triton_chunk10.py} \
  KDA_FILES=${KDA_FILES:-tasks/kda_prefill/candidates/triton_intra7.py} KDA_RESERVE=${KDA_RESERVE:-270} \
  bash scripts/la_s30.sh
