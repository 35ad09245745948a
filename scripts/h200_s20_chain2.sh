#!/usr/bin/env bash
# Next session, chain call 2 of 4, within 30 s of scripts/h200_s19_chain1.sh (<= 200 s). carry:
# [".whl-peers/parts/<libs-cu13>.part-00", ".whl-peers/c3q"]  command: bash scripts/h200_s20_chain2.sh
# .whl-peers/c3q (quack-kernels and the small nvidia-cutlass-dsl wheels, 5.2 MiB) came out of call 1's carry in session
# 23: the tree had grown to 23 MiB and call 1's carry went over 64 MiB. Installed here into /tmp/site3 and merged into
# /tmp/site with `cp -r` (a second `pip --target --upgrade` into /tmp/site would replace folders call 1 filled).
# Stashes the first of the three cutlass-cu13 parts in /tmp/whl-parts (session 19: half the wheel, 46 MB, plus the
# ~20 MB tree was refused as over 64 MiB), then the harness question session 19 left open: is the candidate's
# arena memory (cuMemCreate, runner/shared.py) slower than the caching allocator's at decode sizes?
# (`scripts/placement_bias.py --arenas 4`: one kernel on 8 copies, 4 graphs on one copy and 4 arenas, one rotation.)
# PLACEMENT=0: the stash only (~5 s), when the session's device time is short.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/whl-parts
start=$(date +%s)
cp .whl-peers/parts/*.part-00 /tmp/whl-parts/ && ls -la /tmp/whl-parts | tee "$OUT/stash.txt"
[ -d /tmp/site/pydantic ] || echo "call 1's /tmp/site is missing: not the same machine"
if ls .whl-peers/c3q/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site3 .whl-peers/c3q/*.whl \
    > "$OUT/c3q_install.txt" 2>&1 && cp -r /tmp/site3/. /tmp/site/ && echo "c3q installed into /tmp/site" \
    || echo "c3q install FAILED (c3q_install.txt)"
fi
export PYTHONPATH=/tmp/site:$PWD/src KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
[ "${PLACEMENT:-1}" = 0 ] && { echo "placement_bias skipped (PLACEMENT=0)"; bash scripts/pack_out.sh; exit 0; }
timeout 150 python3 scripts/placement_bias.py tasks/rmsnorm/solutions/triton_rowwise.py --arenas 4 --orders shuffled \
  --out "$OUT/placement_bias.json" 2>&1 | grep -E "spread|arenas|copy0 " | tee "$OUT/placement_bias.txt"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
