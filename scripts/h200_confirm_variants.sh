#!/usr/bin/env bash
# Next device call for Nsight Compute's confirmation (not yet run). On 2026-12-01 the profiled runner
# built under ncu but its `profile` request ran past 37 s (results/h200-runs-2026-12-01/confirm/).
# Suspects: ncu's tree tracker and injection sockets live under /tmp/NVIDIA-treetracker-* created by
# root, which the runner's uid 2147480000 may not reach after its drop (it connected before); landlock
# may refuse making socket files. So: one workload of rmsnorm's Triton candidate through `eval`, the
# profiled runner leaving out nothing, then uid, then landlock, then both, each under --timeout 30,
# with scripts/ncu_watch.sh dumping the python runner's stacks once it is 25 s old.
# carry: .whl
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
clean() { grep -v "leaked\|nanobind\|skipped rem\|refleaks\|Warning"; }
ls -la /tmp | grep -i nvidia | tee "$OUT/tmp_listing.txt"
for v in "" uid landlock "uid,landlock"; do
  tag=${v:-none}; tag=${tag//,/_}
  echo "=== variant [$v]"
  bash scripts/ncu_watch.sh 25 > "$OUT/watch_$tag.txt" 2>&1 &
  w=$!
  KERNELCRAFT_PROFILED_SANDBOX_SKIP="$v" timeout "${VARIANT_S:-120}" python3 -m kernelcraft eval tasks/rmsnorm \
    tasks/rmsnorm/solutions/triton_rowwise.py --device cuda --no-peers --workload 19a11d82 --timeout 30 \
    --json "$OUT/confirm_$tag.json" 2>&1 | clean | tail -3
  kill $w
  head -c 4000 "$OUT/watch_$tag.txt"
  python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
for s in r['solutions']:
    c = s.get('confirmation') or {}
    print(s['name'], s['status'], 'confirmed' if c.get('confirmed') else 'UNCONFIRMED', str(c.get('reason', ''))[:400])
" "$OUT/confirm_$tag.json"
done 2>&1 | tee "$OUT/variants.txt"
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
