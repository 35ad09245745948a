#!/usr/bin/env bash
# Next session: where does the candidate's process handicap come from? (<= 560 s, any one-GPU kind)
#   carry: [".whl", ".whl-peers/c1"]          command: bash scripts/h200_s23_handicap.sh   (DEADLINE=540 default)
# Session 22 (results/h100/README.md): Liger's code as a candidate read a median +0.37 us slower than the same code
# as peer:liger, and --peers-beside did not change that (+0.38 us). Experiment 1: two A/A copies as two candidates
# (two runner processes) beside the promoted kernel, and the promoted kernel's own code as a peer of a task copy
# (`scripts/aa_candidate.py --to-peer self`). If aa_liger and aa_liger2 agree with each other and both sit ~0.4 us
# above peer:liger, while the promoted kernel sits the same ~0.4 us above peer:self, the handicap is the process
# (the runner's replays after the judge's refill), and the fix is to time trusted rows through a runner too.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-540} - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
declare -A SOL=([rmsnorm]=triton_rowwise.py [layernorm]=triton_dispatch.py [silu_mul]=triton_tiled.py)
A=/tmp/handicap; rm -rf $A; mkdir -p $A
for t in ${TASKS:-rmsnorm layernorm silu_mul}; do
  l=$(left); [ "$l" -lt 70 ] && { echo "=== no time for $t ($l s left)"; continue; }
  cp -r tasks/$t $A/$t
  python3 scripts/aa_candidate.py --to-peer self tasks/$t/solutions/${SOL[$t]} $A/$t/peers/self.py > /dev/null
  python3 scripts/aa_candidate.py tasks/$t/peers/liger.py $A/$t/aa/aa_liger.py > /dev/null
  python3 scripts/aa_candidate.py tasks/$t/peers/liger.py $A/$t/aa/aa_liger2.py > /dev/null
  echo "=== $t ($l s left)"; t0=$(date +%s)
  timeout $(( l < 150 ? l - 5 : 145 )) python3 -m kernelcraft eval $A/$t tasks/$t/solutions/${SOL[$t]} \
    $A/$t/aa/aa_liger.py $A/$t/aa/aa_liger2.py --with-baseline --device cuda --peers --peer liger --peer self \
    --budget-ms 100 --no-confirm --json "$OUT/$t.json" > "$OUT/$t.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  python3 scripts/aa_handicap.py "$OUT/$t.json" --pair "${SOL[$t]%.py}=peer:self"
done 2>&1 | tee "$OUT/handicap.txt"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
