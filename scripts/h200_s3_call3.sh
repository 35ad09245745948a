#!/usr/bin/env bash
# Device call 3 (this session): 1. why the Nsight Compute confirmation stalls in `eval` (the smoke of
# call 1 timed out in triton_rowwise's timing): one workload, --timeout 40, scripts/ncu_watch.sh
# dumping the profiled runner's stacks once it is 35 s old; 2. linear attention (issue 23):
# eval of the three tasks with their FLA peers, without the confirmation; stashes part 00 of quack's libs wheel.
# carry: .whl .whl-peers/c1 .whl-peers/p/<libs-cu13>.part-00
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl/*.whl .whl-peers/c1/*.whl || exit 1
mkdir -p /tmp/whl-peers-stash && cp .whl-peers/p/*.part-00 /tmp/whl-peers-stash/
export PYTHONPATH=/tmp/site:$PWD/src KERNELCRAFT_CACHE=/tmp/kc_cache
clean() { grep -v "leaked\|nanobind\|skipped rem\|refleaks\|Warning"; }
bash scripts/ncu_watch.sh 35 > "$OUT/ncu_watch.txt" 2>&1 &
watch=$!
timeout 110 python3 -m kernelcraft eval tasks/rmsnorm tasks/rmsnorm/solutions/triton_rowwise.py --device cuda \
  --no-peers --workload 19a11d82 --timeout 40 --json "$OUT/confirm_smoke.json" 2>&1 | clean | tail -8
echo "eval rc ${PIPESTATUS[0]} after $(( $(date +%s) - start )) s"
kill $watch
cut -c1-300 "$OUT/ncu_watch.txt" | head -120
python3 - "$OUT/confirm_smoke.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["solutions"]:
    print(s["name"], s["status"], s.get("promoted"), (s.get("reason") or "")[:600])
    print("  confirmation:", json.dumps(s.get("confirmation"))[:3000])
PY
echo "=== linear attention ($(( $(date +%s) - start )) s in)"
declare -A LIMIT=([gdn_decode]=60 [gdn_prefill]=110 [kda_prefill]=110)
for t in gdn_decode gdn_prefill kda_prefill; do
  echo "=== eval $t"
  timeout "${LIMIT[$t]}" python3 -m kernelcraft eval "tasks/$t" --device cuda --budget-ms 100 --no-confirm \
    --json "$OUT/$t.json" > "$OUT/$t.log" 2>&1
  echo "rc $?"
  clean < "$OUT/$t.log" | grep -B2 -A30 "x best peer" | head -40
done
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
