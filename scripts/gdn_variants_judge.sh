#!/usr/bin/env bash
# gdn_prefill: a candidate ($BASE) and its CONFIG variants ($VARIANTS: JSON objects, one per line) split beside the
# solution it must beat ($CMP) and FLA on all nine workloads (scripts/gdn_prefill_split.py: warm L2,
# torch.profiler), the form of $BASE with the best geometric mean against FLA (scripts/split_best.py) then judged by
# `kernelcraft eval` beside $CMP, with FLA and the confirmation. SKIP_SPLIT=1: the eval of $CMP and $BASE alone.
# Called by scripts/gdn_s27_wu.sh and scripts/gdn_s27_tb.sh (session 27), which set those; any one-GPU kind,
# carry [".whl", ".whl-peers/c1"] (installed here unless /tmp/site has them). Writes $OUT/{gpu.txt,variants.txt,
# <VDIR>/,split.{txt,json},best.txt,gdn_prefill.{json,log}}.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-550} - ($(date +%s) - start) )); }
: "${CMP:?}" "${BASE:?}" "${VARIANTS:?}"
VDIR=${VDIR:-variants}
if [ ! -d /tmp/site/pydantic ]; then
  source scripts/device_wheels.sh
  PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
else
  export PYTHONPATH=${PYTHONPATH:-/tmp/site:$PWD/src}
fi
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
judge() {  # kernelcraft eval of $CMP and the given file, FLA beside, with the confirmation
  local l; l=$(left)
  echo "=== tasks/gdn_prefill $CMP $1 ($l s left)"; local t0; t0=$(date +%s)
  timeout $(( l - 10 )) python3 -m kernelcraft eval tasks/gdn_prefill "$CMP" "$1" --device cuda --peers --budget-ms ${GDN_BUDGET:-50} \
    --confirm --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/gdn_prefill.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -32 | cut -c1-200
}
[ "${SKIP_SPLIT:-0}" = 1 ] && { judge "$BASE"; exit 0; }
mapfile -t V <<< "$VARIANTS"
rm -rf "/tmp/$VDIR"
python3 scripts/config_variants.py "$BASE" "/tmp/$VDIR" "${V[@]}" | tee "$OUT/variants.txt"
cp -r "/tmp/$VDIR" "$OUT/$VDIR"
S=""; [ "$BASE" != "$CMP" ] && S="--solution $BASE"  # BASE may be CMP itself (variants of the solution to beat)
for f in /tmp/"$VDIR"/*.py; do S="$S --solution $f"; done
echo "=== split ($(left) s left)"; t0=$(date +%s)
# shellcheck disable=SC2086
timeout $(( $(left) / 2 )) python3 scripts/gdn_prefill_split.py --task gdn_prefill --solution "$CMP" $S \
  --workloads 32bd0dca,b5716bbf,72e2d95a,40d01a26,c3ecd709,d790aa8b,7f152d68,8ecd103d,cc90ac47 --calls 10 \
  --out "$OUT/split.json" 2>&1 | quiet | grep -v "^  " | tee "$OUT/split.txt"
echo "split: $(( $(date +%s) - t0 )) s"
if [ "$BASE" = "$CMP" ]; then  # variants of the solution to beat: judge one only if the split says it leads
  BEST=$(python3 scripts/split_best.py "$OUT/split.json" --exclude "$(basename "$CMP" .py)" --must-beat "$(basename "$CMP" .py)")
  [ -n "$BEST" ] || { echo "no variant beat $(basename "$CMP" .py) in the split: no eval" | tee "$OUT/best.txt"; exit 0; }
else
  BEST=$(python3 scripts/split_best.py "$OUT/split.json" --exclude "$(basename "$CMP" .py)")
  [ -n "$BEST" ] || BEST=$BASE
fi
echo "best $(basename "$BASE" .py) form: $BEST" | tee "$OUT/best.txt"
judge "$BEST"
echo "=== done in $(( $(date +%s) - start )) s"
