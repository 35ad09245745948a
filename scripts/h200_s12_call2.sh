#!/usr/bin/env bash
# Session 12, device call 2 (~560 s). carry: [".whl", ".whl-peers/c1"]   command: bash scripts/h200_s12_call2.sh
# Issue 23's two missing pieces of evidence:
# 1. what limits gdn_decode's triton_decode (0.895x FLA, no profile yet): `kernelcraft profile` at batch 256
#    (4ad58e4b, state-traffic bound) and batch 1 (0d409578, fixed per-call cost);
# 2. the Qwen3-Next e2e prefill record (two earlier calls ran past 200 and 235 s with no output): first the
#    eager rows alone (--no-compile), so a record exists whatever the compiles cost, then the full phase
#    with the compiled rows; e2e now prints each step's wall time on stderr, so a cut run says where it was.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
for w in 4ad58e4b 0d409578; do
  t0=$(date +%s)
  PYTHONPATH=/tmp/site:$PWD/src timeout 80 python3 -m kernelcraft profile tasks/gdn_decode \
    tasks/gdn_decode/solutions/triton_decode.py --workload $w --device cuda --out "$OUT/profile_decode_$w" \
    > "$OUT/profile_decode_$w.log" 2>&1
  echo "profile $w: rc=$? $(( $(date +%s) - t0 ))s"; grep -v "^$" "$OUT/profile_decode_$w.log" | tail -14
done
t0=$(date +%s)
OUT=$OUT/eager KC_NO_PACK=1 PHASES=prefill PREFILL_S=150 BUDGET_MS=30 DEADLINE_S=190 E2E_ARGS=--no-compile \
  bash scripts/h200_e2e_qwen3next.sh
echo "e2e eager prefill: $(( $(date +%s) - t0 ))s"
t0=$(date +%s)
OUT=$OUT/full KC_NO_PACK=1 PHASES=prefill PREFILL_S=${FULL_S:-270} BUDGET_MS=30 DEADLINE_S=$(( ${FULL_S:-270} + 30 )) \
  bash scripts/h200_e2e_qwen3next.sh
echo "e2e full prefill: $(( $(date +%s) - t0 ))s"
grep -h "^e2e " "$OUT"/full/e2e_prefill.log 2>/dev/null | tail -20
bash scripts/pack_out.sh
