#!/usr/bin/env bash
# Session 30 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]   command: DEADLINE=550 bash scripts/la_s30.sh
# Short prefills (issue 23): FLA's fused recurrent kernels are peers now (tasks/{gdn,kda}_prefill/peers/
# fla_recurrent.py, a user's pick at a few tokens); gdn chunk10 and kda intra7 add a one-launch token-by-token path
# (`_recur`) below RECUR_MAX_T tokens; intra7's long path also has `_wu` in bf16 (WU_BF16, TB_BF16), so its eval beside
# intra5 reads the short path at the 1-token workload and the bf16 `_wu` at the others. First scripts/la_short_sweep.py (do_bench, L2 cleared) of the promoted
# solution, the candidate at RECUR_MAX_T 0 / 16 / 64 and RECUR_BV choices beside both FLA peers at 1-256 tokens
# (the crossover and the tile), then `kernelcraft eval --peers --budget-ms 200 --confirm` of each task's promoted
# solution and candidate (holdout shapes with drawn cu_seqlens run for the first time on a GPU here).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-550} - ($(date +%s) - start) )); }
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
SHAPES=${SHAPES:-1x1,2x1,4x1,8x1,16x1,32x1,64x1,128x1,256x1,16x4,64x8,256x16}
sweep() {  # task, promoted, candidate
  local task=$1 promoted=$2 cand=$3
  echo "=== short sweep: $task ($(left) s left)"
  local cap=$(( $(left) / 4 )); [ "$cap" -gt "${SWEEP_S:-100}" ] && cap=${SWEEP_S:-100}
  timeout "$cap" python3 scripts/la_short_sweep.py --task "$task" --shapes "$SHAPES" --rep 50 \
    --impl "promoted=$promoted" --impl "r0=$cand:{\"RECUR_MAX_T\": 0}" --impl "r16=$cand:{\"RECUR_MAX_T\": 16}" \
    --impl "r64=$cand:{\"RECUR_MAX_T\": 64}" --impl "r64bv4=$cand:{\"RECUR_MAX_T\": 64, \"RECUR_BV\": 4}" \
    --impl "r64bv8=$cand:{\"RECUR_MAX_T\": 64, \"RECUR_BV\": 8}" --impl "r64bv16=$cand:{\"RECUR_MAX_T\": 64, \"RECUR_BV\": 16}" \
    --impl "r64nopf=$cand:{\"RECUR_MAX_T\": 64, \"RECUR_PREFETCH\": false}" \
    --impl "r64w2=$cand:{\"RECUR_MAX_T\": 64, \"RECUR_WARPS\": 2}" \
    --out "$OUT/short_$task.json" 2>&1 | quiet | cut -c1-220
}
judge() {  # task, reserve (s), files...
  local task=$1 reserve=$2; shift 2
  local l; l=$(( $(left) - reserve ))
  [ "$l" -lt 60 ] && { echo "=== $task: no time ($l s)"; return; }
  echo "=== tasks/$task $* ($l s)"; local t0; t0=$(date +%s)
  timeout "$l" python3 -m kernelcraft eval "tasks/$task" "$@" --device cuda --peers --budget-ms "${BUDGET:-200}" \
    --confirm --json "$OUT/$task.json" > "$OUT/$task.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/$task.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -30 | cut -c1-200
}
GDN_SOL=tasks/gdn_prefill/solutions/triton_chunk8.py GDN_CAND=tasks/gdn_prefill/solutions/triton_chunk10.py
KDA_SOL=tasks/kda_prefill/solutions/triton_intra5.py KDA_CAND=tasks/kda_prefill/candidates/triton_intra7.py
[ "${SKIP_SWEEP:-0}" = 1 ] || { sweep gdn_prefill $GDN_SOL $GDN_CAND; sweep kda_prefill $KDA_SOL $KDA_CAND; }
# the candidates at their files' own CONFIG (set RECUR_MAX_T in the file from the sweep before a second call)
judge gdn_prefill "${KDA_RESERVE:-220}" ${GDN_FILES:-$GDN_SOL $GDN_CAND}
judge kda_prefill 5 ${KDA_FILES:-$KDA_SOL $KDA_CAND}
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
