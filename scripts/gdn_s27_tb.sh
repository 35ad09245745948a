#!/usr/bin/env bash
# Session 27 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]   command: DEADLINE=550 bash scripts/gdn_s27_tb.sh
# gdn_prefill: candidates/triton_chunk8.py (chunk7 with T diag(beta) stored in bf16) and its KKT_S_ODD forms (the
# scores in `_kkt`'s odd programs, no `_sc` launch), split beside the promoted chunk7 and FLA on all nine workloads
# (scripts/gdn_prefill_split.py, warm L2); the chunk8 form with the best geometric mean against FLA is then judged by
# `kernelcraft eval` beside chunk7, with FLA and the confirmation. (scripts/gdn_s27_wu.sh's form.) SKIP_SPLIT=1: the
# eval of chunk7 and chunk8 alone (~210 s on an H100; session 27's split + eval needed more than 395 s).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-550} - ($(date +%s) - start) )); }
if [ ! -d /tmp/site/pydantic ]; then
  source scripts/device_wheels.sh
  PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
else
  export PYTHONPATH=${PYTHONPATH:-/tmp/site:$PWD/src}
fi
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
C6=tasks/gdn_prefill/solutions/triton_chunk7.py  # the promoted one, the comparison
C7=tasks/gdn_prefill/candidates/triton_chunk8.py
rm -rf /tmp/c8v
# session 27 ran V=('{"KKT_S_ODD": true}' '{"TB_BF16": false, "KKT_S_ODD": true}') on chunk8 with KKT_S_ODD false;
# chunk8's CONFIG has KKT_S_ODD true since (that run's best form)
V=('{"KKT_S_ODD": false}' '{"TB_BF16": false}')
if [ "${SKIP_SPLIT:-0}" = 1 ]; then  # the verdict alone: chunk7 and chunk8 as committed
  echo "=== tasks/gdn_prefill $C6 $C7 ($(left) s left)"; t0=$(date +%s)
  timeout $(( $(left) - 10 )) python3 -m kernelcraft eval tasks/gdn_prefill $C6 $C7 --device cuda --peers --budget-ms 50 \
    --confirm --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/gdn_prefill.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -32 | cut -c1-200
  exit 0
fi
python3 scripts/config_variants.py $C7 /tmp/c8v "${V[@]}" | tee "$OUT/variants.txt"
cp -r /tmp/c8v "$OUT/c8v"
S="--solution $C7"; for f in /tmp/c8v/*.py; do S="$S --solution $f"; done
echo "=== split ($(left) s left)"; t0=$(date +%s)
timeout $(( $(left) / 2 )) python3 scripts/gdn_prefill_split.py --task gdn_prefill --solution $C6 $S \
  --workloads 32bd0dca,b5716bbf,72e2d95a,40d01a26,c3ecd709,d790aa8b,7f152d68,8ecd103d,cc90ac47 --calls 10 \
  --out "$OUT/split.json" 2>&1 | quiet | grep -v "^  " | tee "$OUT/split.txt"
echo "split: $(( $(date +%s) - t0 )) s"
BEST=$(python3 - "$OUT/split.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
scores = {}
for name, path in d["solutions"].items():
    r = [w["fla"]["total_us_per_call"] / w[name]["total_us_per_call"] for w in d["workloads"].values() if name in w and "fla" in w]
    if r:
        scores[name] = math.exp(sum(map(math.log, r)) / len(r))
for n, s in sorted(scores.items(), key=lambda x: -x[1]):
    print(f"{n} {s:.3f}", file=sys.stderr)
c7 = {n: s for n, s in scores.items() if n != "triton_chunk7"}
print(d["solutions"][max(c7, key=c7.get)] if c7 else "")
PY
)
[ -n "$BEST" ] || BEST=$C7
echo "best chunk8 form: $BEST" | tee "$OUT/best.txt"
l=$(left)
echo "=== tasks/gdn_prefill chunk6 $BEST ($l s left)"; t0=$(date +%s)
timeout $(( l - 10 )) python3 -m kernelcraft eval tasks/gdn_prefill $C6 $BEST --device cuda --peers --budget-ms 50 --confirm \
  --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/gdn_prefill.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -32 | cut -c1-200
echo "=== done in $(( $(date +%s) - start )) s"
