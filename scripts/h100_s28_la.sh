#!/usr/bin/env bash
# Session 28 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h100_s28_la.sh
# The linear-attention records again under kc-timing/8 (every gdn_prefill / kda_prefill record before it gave most
# rows exactly min_reps = 5 samples: the token-by-token reference's brief calls and a 36-58 ms baseline used up the
# rotation's shared wall bound). gdn_prefill: $GDN (default solutions/triton_chunk8.py, plus candidates/
# triton_chunk9.py where it exists) beside FLA; then kda_prefill: $KDA (default solutions/triton_intra5.py) beside
# FLA; `kernelcraft eval --peers --budget-ms $BUDGET --confirm` each, in what is left of $DEADLINE.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - start) )); }
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
GDN=${GDN:-tasks/gdn_prefill/solutions/triton_chunk8.py}  # promoted after this script ran with GDN=candidates/...
[ -z "${GDN_ONLY:-}" ] && [ -f tasks/gdn_prefill/candidates/triton_chunk9.py ] && GDN="$GDN tasks/gdn_prefill/candidates/triton_chunk9.py"
KDA=${KDA:-tasks/kda_prefill/solutions/triton_intra5.py}
judge() {  # task, reserve (s), files...
  local task=$1 reserve=$2; shift 2
  local l; l=$(( $(left) - reserve ))
  [ "$l" -lt 60 ] && { echo "=== $task: no time ($l s)"; return; }
  echo "=== tasks/$task $* ($l s)"; local t0; t0=$(date +%s)
  timeout "$l" python3 -m kernelcraft eval "tasks/$task" "$@" --device cuda --peers --budget-ms "${BUDGET:-200}" \
    --confirm --json "$OUT/$task.json" > "$OUT/$task.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/$task.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -30 | cut -c1-200
}
# shellcheck disable=SC2086
judge gdn_prefill "${KDA_RESERVE:-200}" $GDN
# shellcheck disable=SC2086
judge kda_prefill 5 $KDA
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
