#!/usr/bin/env bash
# Next session: does --peers-beside remove the harness's asymmetry? (<= 560 s, any one-GPU kind)
#   carry: [".whl", ".whl-peers/c1"]          command: bash scripts/h200_s22_beside.sh   (DEADLINE=540 default)
# Session 21 found the baseline a median +0.50 us slower beside a candidate than alone on the H100 records
# (scripts/harness_asymmetry.py), the size of every decode "miss" against a peer timed alone. An A/A decides:
# Liger's own code as a candidate (scripts/aa_candidate.py) beside the promoted kernel, each task evaluated twice on
# this machine, without and with --peers-beside. With the flag, aa_liger against peer:liger timed beside it should
# read ~1.00x at every workload (inside the placement noise); without it the A/A read 0.0-0.5 us slower (session 19).
# Last, with the time left: rmsnorm with --confirm, now that the confirmation starts after the timings (commit 057ff55).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-540} - ($(date +%s) - start) )); }
# Stash the first cutlass-cu13 part when it was carried (session 22's H100 chain: calls 2-4 as h200_s19_chain1.sh
# with TASKS=" ", h200_s20_chain3.sh, h200_s20_chain4.sh join and install it).
if ls .whl-peers/parts/*.part-00 > /dev/null 2>&1; then mkdir -p /tmp/whl-parts && cp .whl-peers/parts/*.part-00 /tmp/whl-parts/; fi
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
declare -A SOL=([rmsnorm]=tasks/rmsnorm/solutions/triton_rowwise.py [layernorm]=tasks/layernorm/solutions/triton_dispatch.py
                [silu_mul]=tasks/silu_mul/solutions/triton_tiled.py)
A=/tmp/beside; rm -rf $A; mkdir -p $A
for t in ${TASKS:-rmsnorm silu_mul layernorm}; do
  python3 scripts/aa_candidate.py tasks/$t/peers/liger.py $A/$t/aa_liger.py > /dev/null
  for mode in alone beside; do
    l=$(left); [ "$l" -lt 60 ] && { echo "=== no time for $t $mode ($l s left)"; continue; }
    flag=$([ $mode = beside ] && echo --peers-beside)
    echo "=== $t $mode ($l s left)"; t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout $(( l < 120 ? l - 5 : 115 )) python3 -m kernelcraft eval tasks/$t ${SOL[$t]} $A/$t/aa_liger.py --with-baseline \
      --device cuda --peers --peer liger --peer fla --budget-ms 100 --no-confirm $flag --json "$OUT/${t}_$mode.json" \
      > "$OUT/${t}_$mode.log" 2>&1
    echo "rc $? $(( $(date +%s) - t0 )) s"
    python3 - "$OUT/${t}_$mode.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = {s["name"]: s for s in d["solutions"]}
liger = {w["uuid"]: w.get("latency_ms") for w in rows.get("peer:liger", {}).get("workloads", [])}
for name in [n for n, s in rows.items() if s.get("role") == "candidate"]:
    s = rows[name]
    print(f"{name}: x best peer {s.get('speedup_vs_best_peer')}, asymmetry {s.get('timing_asymmetry_ms')}, "
          f"unsettled {s.get('unsettled_workloads')}, beside unavailable {s.get('beside_unavailable')}")
    for w in s.get("workloads") or []:
        b = (w.get("beside_ms") or {}).get("peer:liger")
        f = lambda x: f"{x * 1e3:.2f}" if x else "-"
        print(f"  {json.dumps(w['axes'])[:44]:44s} cand {f(w.get('latency_ms'))} us, liger alone {f(liger.get(w['uuid']))}, "
              f"beside {f(b)}; best {w.get('best_peer')} {f(w.get('best_peer_latency_ms'))} (beside {w.get('best_peer_beside')})")
PY
  done
done 2>&1 | tee "$OUT/beside.txt"
python3 scripts/harness_asymmetry.py "$OUT"/*_alone.json "$OUT"/*_beside.json | tee "$OUT/asymmetry.txt"
# Then session 21's other harness fix: with --confirm the runner under Nsight Compute now starts after the last
# timing; the candidate's short rows should be as clean as without it (chain4: 2 of 3 bimodal, 0.74x).
l=$(left)
if [ "$l" -ge 90 ]; then
  echo "=== rmsnorm --confirm ($l s left)"; t0=$(date +%s)
  timeout $(( l - 5 )) python3 -m kernelcraft eval tasks/rmsnorm tasks/rmsnorm/solutions/triton_rowwise.py --with-baseline \
    --device cuda --peers --peer liger --peer fla --budget-ms 100 --confirm --json "$OUT/rmsnorm_confirm.json" \
    > "$OUT/rmsnorm_confirm.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  python3 scripts/timing_spread.py "$OUT/rmsnorm_confirm.json" --quiet | tail -4
  grep -v "leaked\|nanobind\|Warning" "$OUT/rmsnorm_confirm.log" | grep -A12 "x best peer" | head -14 | cut -c1-200
else
  echo "=== no time for the --confirm check ($l s left)"
fi 2>&1 | tee "$OUT/confirm.txt"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
