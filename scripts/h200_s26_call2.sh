#!/usr/bin/env bash
# Session 26, call 2 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]
#   command: bash scripts/h200_s26_call2.sh
# Call 1 (race fixed): chunk6 0.98x FLA on an H100, ahead at 8192 x 1, 32 and 128 sequences, behind at 3-16
# sequences of 4096-4551 tokens and at 1024 x 1, where the sequence-parallel recurrence (_seg/_xfer/_pscan; chosen
# for N <= SEG_MAX_N 16) runs. Here: chunk6's path variants (scripts/config_variants.py) split beside FLA on all nine
# workloads (warm L2, torch.profiler), the variant with the best geometric mean against FLA picked, then
# `kernelcraft eval` of chunk6 and that variant with FLA and the confirmation.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-550} - ($(date +%s) - start) )); }
if [ ! -d /tmp/site/pydantic ]; then
  source scripts/device_wheels.sh
  PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
else
  export PYTHONPATH=/tmp/site:$PWD/src
fi
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
C6=tasks/gdn_prefill/solutions/triton_chunk6.py  # candidates/ until its promotion after this call
rm -rf /tmp/c6v
# C6_VARIANTS_FILE: one JSON object per line to try instead of session 26's path variants (e.g.
# scripts/gdn_chunk6_prep_variants.txt: the preparation kernels' knobs)
if [ -n "${C6_VARIANTS_FILE:-}" ]; then mapfile -t V < "$C6_VARIANTS_FILE"
else V=('{"SEG_MAX_N": 1}' '{"SEG_MAX_N": 2}' '{"SEG_MAX_N": 4}' '{"SEG": 0}' '{"SEG_TARGET": 4}' '{"SEG_TOTAL": 16}'); fi
python3 scripts/config_variants.py $C6 /tmp/c6v "${V[@]}" | tee "$OUT/variants.txt"
cp -r /tmp/c6v "$OUT/c6v"
S=""; for f in /tmp/c6v/*.py; do S="$S --solution $f"; done
echo "=== split ($(left) s left)"; t0=$(date +%s)
timeout 200 python3 scripts/gdn_prefill_split.py --task gdn_prefill --solution $C6 $S \
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
best = max(scores, key=scores.get)
print(d["solutions"][best] if best != "triton_chunk6" else "")
PY
)
echo "best variant: ${BEST:-chunk6 itself}" | tee "$OUT/best.txt"
l=$(left)
echo "=== tasks/gdn_prefill chunk6 ${BEST} ($l s left)"; t0=$(date +%s)
timeout $(( l - 10 )) python3 -m kernelcraft eval tasks/gdn_prefill $C6 $BEST --device cuda --peers --budget-ms 50 --confirm \
  --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/gdn_prefill.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -32 | cut -c1-200
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
