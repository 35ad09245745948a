#!/usr/bin/env bash
# Session 31 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1", ".whl-diag"]
#   command: DEADLINE=550 bash scripts/la_s31_stall.sh
# Session 30: the evals of gdn chunk10 and kda intra7 (each with `_recur`, the one-launch token loop for short
# inputs) never left correctness (or chunk10's holdouts) within 141-265 s on an H100, twice, while the other rows
# reached timing and then made no progress either; chunk8 / intra5 alone had gone through in session 28, and
# scripts/la_short_sweep.py had run `_recur` at BV 4 / 8 / 16 without trouble. Each step below runs under
# scripts/dump_stacks.sh: still running at AT s, every Python process's stack (py-spy) and nvidia-smi go to
# $OUT/stacks_<step>.txt, which says who waits for what (the GPU slot, a runner's reply after a compile, a lock,
# a kernel that never ends). Steps: `_recur` called directly (BV 4 / 8, no graph); the eval of the 1-token
# workload alone without peers, then with both FLA peers (gdn; gdn with --no-overlap: one job on the GPU at a time,
# no slot sharing; kda); then gdn's whole eval with the peers. Since session 30 a job that waits for the GPU slot
# past 3x its phase's deadline ends TIMEOUT naming who held the GPU (worker/pool.py GpuSlot.describe): with
# `--timeout 20` that is 60 s: the 1-token evals pass it to surface such a wait inside their limits.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-550} - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
pip install -q --no-index --target /tmp/pyspy .whl-diag/py_spy-*.whl > "$OUT/pyspy.log" 2>&1; export PATH=/tmp/pyspy/bin:$PATH
command -v py-spy || echo "py-spy: not installed (stacks will be missing)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
G=tasks/gdn_prefill/candidates/triton_chunk10.py K=tasks/kda_prefill/candidates/triton_intra7.py
echo "=== direct ($(left) s left)"
AT=25 FILE="$OUT/stacks_direct.txt" bash scripts/dump_stacks.sh 35 python3 scripts/la_short_sweep.py --task gdn_prefill \
  --shapes 1x1,9x3 --no-peers --no-graph --rep 5 --impl "bv4=$G:{\"RECUR_BV\": 4}" --impl "bv8=$G:{\"RECUR_BV\": 8}" 2>&1 | tail -5
ev() {  # tag limit task file args...
  local tag=$1 lim=$2 task=$3 file=$4; shift 4
  [ "$(left)" -lt $(( lim + 5 )) ] && lim=$(( $(left) - 5 ))
  [ "$lim" -lt 30 ] && { echo "=== $tag: no time"; return; }
  echo "=== $tag ($(left) s left, limit $lim s)"; local t0; t0=$(date +%s)
  AT=$(( lim - 15 )) FILE="$OUT/stacks_$tag.txt" bash scripts/dump_stacks.sh "$lim" python3 -m kernelcraft eval "tasks/$task" "$file" \
    --device cuda --no-calibrate --json "$OUT/$tag.json" "$@" > "$OUT/$tag.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"; grep -v "Warning\|warn(" "$OUT/$tag.log" | tail -14 | cut -c1-220
  [ -f "$OUT/stacks_$tag.txt" ] && echo "   (stacks: stacks_$tag.txt)"
}
ev gdn_one_alone 60 gdn_prefill $G --timeout 20 --workload 7f152d68 --no-peers --no-timing --no-confirm
ev gdn_one_peers 90 gdn_prefill $G --timeout 20 --workload 7f152d68 --peers --budget-ms 50 --no-confirm
ev gdn_one_noov 70 gdn_prefill $G --timeout 20 --workload 7f152d68 --peers --budget-ms 50 --no-confirm --no-overlap
ev kda_one_peers 110 kda_prefill $K --timeout 20 --workload 5ab1502f --peers --budget-ms 50 --no-confirm
ev gdn_all_peers 200 gdn_prefill $G --peers --budget-ms 100 --no-confirm
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
