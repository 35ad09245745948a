#!/usr/bin/env bash
# Session 31 (<= 580 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1", ".whl-diag"]
#   command: DEADLINE=570 bash scripts/la_s31.sh          (TASKS="kda_prefill" in a second call if it did not fit)
# Session 30's evals of gdn chunk10 / kda intra7 (the one-launch `_recur` short path) beside both FLA peers ran
# out of 141-265 s: timing is one job at a time and the peers' timing phases alone took 52 + 18 s (gdn) and
# 103 + 21 s (kda) at --budget-ms 200 on an H100, before the candidate's; since then the two tasks no longer time
# their token-loop reference in every row ([timing] time_reference = false), by how much that shortens them is
# what this call shows (`phases_s`). Here: each candidate's eval alone beside both peers (gdn first, at most
# FIRST_S = 330 s, then kda with the rest; `kernelcraft eval --peers --budget-ms 200 --confirm`), under
# scripts/dump_stacks.sh (py-spy stacks of every process and nvidia-smi 20 s before its limit, in case it does
# stand still); then, while >= 120 s are left, the graph-replay sweep (scripts/la_short_sweep.py: device time of the
# promoted solution and the candidate at RECUR_MAX_T 64 beside both peers) for the crossover.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-570} - ($(date +%s) - start) )); }
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
TASKS=${TASKS:-${TASK:-gdn_prefill kda_prefill}}
files() {  # task -> "promoted candidate"
  case "$1" in
    gdn_prefill) echo "tasks/gdn_prefill/solutions/triton_chunk8.py ${GDN_CAND:-tasks/gdn_prefill/solutions/triton_chunk10.py}" ;;
    kda_prefill) echo "tasks/kda_prefill/solutions/triton_intra5.py ${KDA_CAND:-tasks/kda_prefill/candidates/triton_intra7.py}" ;;
    *) echo "unknown task $1 (gdn_prefill or kda_prefill)" >&2; return 2 ;;
  esac
}
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
pip install -q --no-index --target /tmp/pyspy .whl-diag/py_spy-*.whl > "$OUT/pyspy.log" 2>&1; export PATH=/tmp/pyspy/bin:$PATH
command -v py-spy > /dev/null || echo "py-spy: not installed (no stacks)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
set -- $TASKS
n=$#
for TASK in "$@"; do
  pair=$(files "$TASK") || continue
  read -r SOL CAND <<< "$pair"
  # the first of two tasks gets at most FIRST_S (default 330 s), so that the second can still run
  lim=$(( $(left) - 10 ))
  [ "$n" -gt 1 ] && [ "$lim" -gt "${FIRST_S:-330}" ] && lim=${FIRST_S:-330}
  n=$(( n - 1 ))
  [ "$lim" -lt 150 ] && { echo "=== $TASK: no time ($lim s)"; continue; }
  echo "=== $TASK: $CAND beside both peers (limit $lim s)"; t0=$(date +%s)
  AT=$(( lim - 20 )) FILE="$OUT/stacks_$TASK.txt" bash scripts/dump_stacks.sh "$lim" python3 -m kernelcraft eval \
    "tasks/$TASK" "$CAND" --device cuda --peers --budget-ms "${BUDGET:-200}" --confirm --json "$OUT/$TASK.json" \
    > "$OUT/$TASK.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/$TASK.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -30 | cut -c1-200
  [ -f "$OUT/stacks_$TASK.txt" ] && echo "   (it was still running 20 s before its limit: stacks_$TASK.txt)"
done
for TASK in $TASKS; do
  [ "$(left)" -lt 120 ] && break
  pair=$(files "$TASK") || continue
  read -r SOL CAND <<< "$pair"
  echo "=== graph sweep: $TASK ($(left) s left)"
  timeout $(( $(left) - 10 )) python3 scripts/la_short_sweep.py --task "$TASK" --rep 20 --samples 25 \
    --shapes "${SHAPES:-1x1,8x1,16x1,32x1,64x1,128x1,16x4,64x8}" \
    --impl "promoted=$SOL" --impl "r64=$CAND:{\"RECUR_MAX_T\": 64}" --out "$OUT/graph_$TASK.json" 2>&1 | quiet | cut -c1-200
done
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
