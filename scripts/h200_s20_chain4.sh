#!/usr/bin/env bash
# Next session, chain call 4 of 4, within 30 s of call 3 (<= 560 s). carry:
# [".whl-peers/parts/<libs-cu13>.part-02", ".whl-peers/parts/<libs-cu13>.sha256"]
#   command: bash scripts/h200_s20_chain4.sh
# Joins nvidia-cutlass-dsl-libs-cu13 from the three parts (sha256 of each part and of the wheel), installs it ALONE
# into /tmp/site2 and merges that into /tmp/site with `cp -r` (call 1 installed the other cutlass wheels there; a
# second `pip --target --upgrade` into /tmp/site would replace the nvidia_cutlass_dsl/ folder they filled: session
# 18), stops if quack does not import, then the catalog tasks with a quack peer (scripts/s19_catalog_evals.sh).
# This is what session 19's chain ran by hand after h200_s19_chain3.sh failed (results/h100/README.md).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
S=/tmp/whl-parts
( cp .whl-peers/parts/*.part-02 .whl-peers/parts/*.sha256 $S/ && cd $S && for sums in *.sha256; do whl=${sums%.sha256};
    [ -f "$whl" ] || cat "$whl".part-* > "$whl"; sha256sum -c "$sums" || exit 1; done ) > "$OUT/join.txt" 2>&1 \
  || { echo "join FAILED"; cat "$OUT/join.txt"; bash scripts/pack_out.sh; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site2 $S/*.whl \
  > "$OUT/cutlass_install.txt" 2>&1 && cp -r /tmp/site2/. /tmp/site/ || echo "cutlass-cu13 install FAILED (cutlass_install.txt)"
export PYTHONPATH=/tmp/fi-cache:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD/src FLASHINFER_DISABLE_JIT=1
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 scripts/peers_import.py 2>&1 | grep -v Warning | tee "$OUT/peers_import.txt"
grep -q "^quack FAILED" "$OUT/peers_import.txt" && { echo "quack does not import: stopping"; bash scripts/pack_out.sh; exit 1; }
TASKS="${TASKS:-fused_add_rmsnorm rmsnorm softmax layernorm rope cross_entropy}" \
  DEADLINE=$(( ${DEADLINE:-550} - ($(date +%s) - start) )) bash scripts/s19_catalog_evals.sh
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
