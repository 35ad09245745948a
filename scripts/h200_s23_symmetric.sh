#!/usr/bin/env bash
# Session 23 (not run: no machine came), for the next first call (<= 560 s; any card). carry: [".whl", ".whl-peers/c1"]
#   command: bash scripts/h200_s23_symmetric.sh                 (DEADLINE=540 by default: a whole call)
# Does timing the trusted rows through runners of their own (`--trusted-timing runner`, new in session 23) remove
# the candidate's process handicap? Session 23's experiment (scripts/h200_s23_handicap.sh, results/h200/
# catalog-2026-12-06-s23/handicap): Liger's code as two candidates read +0.26 / +0.32 us over peer:liger, the
# promoted kernel +0.38 us over its own code as peer:self. Here the same evaluation per task, once with
# `--trusted-timing runner` and once with the judge timing them (the A/B in one warm call, runner first): with the
# fix aa_liger - peer:liger and triton_rowwise - peer:self should sit at ~0.
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
A=/tmp/symmetric; rm -rf $A; mkdir -p $A
for t in ${TASKS:-rmsnorm silu_mul layernorm}; do
  cp -r tasks/$t $A/$t
  python3 scripts/aa_candidate.py --to-peer self tasks/$t/solutions/${SOL[$t]} $A/$t/peers/self.py > /dev/null
  python3 scripts/aa_candidate.py tasks/$t/peers/liger.py $A/$t/aa/aa_liger.py > /dev/null
  for mode in runner judge; do
    l=$(left); [ "$l" -lt 50 ] && { echo "=== no time for $t $mode ($l s left)"; continue; }
    echo "=== $t --trusted-timing $mode ($l s left)"; t0=$(date +%s)
    timeout $(( l < 100 ? l - 5 : 95 )) python3 -m kernelcraft eval $A/$t tasks/$t/solutions/${SOL[$t]} \
      $A/$t/aa/aa_liger.py --with-baseline --device cuda --peers --peer liger --peer self --trusted-timing $mode \
      --budget-ms 100 --no-confirm --json "$OUT/${t}_$mode.json" > "$OUT/${t}_$mode.log" 2>&1
    echo "rc $? $(( $(date +%s) - t0 )) s"
    python3 scripts/aa_handicap.py "$OUT/${t}_$mode.json" --pair "${SOL[$t]%.py}=peer:self"
  done
done 2>&1 | tee "$OUT/symmetric.txt"
# With time left: the Triton code static torch.compile runs where it is the best peer (session 23's H200 records):
# fused_add_rmsnorm at >= 167 MB (2-4% ahead of every candidate), gelu_tanh_mul at 1 and 16 tokens.
if [ -z "${SKIP_INDUCTOR:-}" ] && [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 10 )) python3 scripts/inductor_code.py tasks/fused_add_rmsnorm --axes num_tokens=16384,hidden_size=4096 \
    --axes num_tokens=4096,hidden_size=5120 --axes num_tokens=8192,hidden_size=8192 --out "$OUT/inductor/fused_add_rmsnorm"
  [ "$(left)" -gt 40 ] && timeout $(( $(left) - 10 )) python3 scripts/inductor_code.py tasks/gelu_tanh_mul \
    --axes num_tokens=1 --axes num_tokens=16 --out "$OUT/inductor/gelu_tanh_mul"
fi 2>&1 | tail -20
echo "=== done in $(( $(date +%s) - start )) s"
[ -n "${NO_PACK:-}" ] || bash scripts/pack_out.sh
