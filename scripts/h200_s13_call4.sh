#!/usr/bin/env bash
# Session 13, device call 4 (~350 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s13_call4.sh
# gdn_prefill: call 3's compute-sanitizer found triton_split's `_scan` reading shared memory out of bounds at
# SCAN_STAGES 1 (triton_chunk's `_scan`, the same code, runs at 2). First: does triton_chunk fault at SCAN_STAGES 1
# too (then it is the stage count, not the split), and do the splits run at SCAN_STAGES 2? Then the eval of those
# that run, beside triton_chunk and FLA.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
  || echo "peer wheels: install failed (see peer_wheels.log)"
export KERNELCRAFT_CACHE=/tmp/kc_cache
V=/tmp/gdn_variants; rm -rf $V /tmp/runs_ok.txt; mkdir -p $V/chunk1 $V/split $V/split2
python3 scripts/config_variants.py tasks/gdn_prefill/solutions/triton_chunk.py $V/chunk1 '{"SCAN_STAGES": 1}' | tee "$OUT/variants.txt"
python3 scripts/config_variants.py tasks/gdn_prefill/candidates/triton_split.py $V/split '{"SCAN_STAGES": 2}' | tee -a "$OUT/variants.txt"
python3 scripts/config_variants.py tasks/gdn_prefill/candidates/triton_split2.py $V/split2 '{"SCAN_STAGES": 2}' \
  '{"SCAN_STAGES": 2, "KKT_WARPS": 8}' | tee -a "$OUT/variants.txt"
: > "$OUT/fault.txt"
for f in $V/chunk1/*.py $V/split/*.py $V/split2/*.py; do
  echo "== $f" | tee -a "$OUT/fault.txt"
  timeout 60 python3 scripts/gdn_prefill_fault.py $f --lens 64 130 1,63,64,65 8192 > /tmp/fault_one.txt 2>&1
  rc=$?
  grep -v Warn /tmp/fault_one.txt | tail -5 | tee -a "$OUT/fault.txt"
  [ $rc -eq 0 ] && [[ $f != */chunk1/* ]] && echo "$f" >> /tmp/runs_ok.txt
done
ok=$(cat /tmp/runs_ok.txt 2>/dev/null | tr '\n' ' ')
echo "judged: triton_chunk $ok"
t0=$(date +%s)
timeout ${EVAL_S:-420} python3 -m kernelcraft eval tasks/gdn_prefill tasks/gdn_prefill/solutions/triton_chunk.py $ok \
  --device cuda --peers --budget-ms 50 --no-confirm --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
echo "eval: rc=$? $(( $(date +%s) - t0 ))s"
grep -v "leaked\|nanobind\|Warning" "$OUT/gdn_prefill.log" | tail -40
bash scripts/pack_out.sh
