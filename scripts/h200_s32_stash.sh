#!/usr/bin/env bash
# Session 32's H200 catalog chain, call A of 2 (~15 s). carry: [".whl-peers/cutlass-xz", ".whl-peers/c3q"]
#   command: bash scripts/h200_s32_stash.sh          then within 30 s: scripts/h200_s32_catalog.sh (call B)
# quack's whole CuTe DSL stack in one call (the 92 MB cutlass-cu13 wheel as a 52 MB xz tarball:
# scripts/pack_cutlass_xz.sh; the old chain took three calls of 31 MB parts, scripts/h200_s20_chain{2,3,4}.sh):
# checks the tarball's sha256, unpacks it into /tmp/site2 and quack's small wheels into /tmp/site3; call B merges
# both into /tmp/site after its own installs (a second `pip --target --upgrade` into one folder replaces folders the
# first filled: session 18).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
rm -rf /tmp/site2 /tmp/site3; mkdir -p /tmp/site2
( cd .whl-peers/cutlass-xz && sha256sum -c ./*.sha256 ) > "$OUT/sha256.txt" 2>&1 && echo "sha256 OK" \
  || { echo "sha256 FAILED"; cat "$OUT/sha256.txt"; bash scripts/pack_out.sh; exit 1; }
xz -dc .whl-peers/cutlass-xz/*.tar.xz | tar -C /tmp/site2 -xf - && echo "cutlass-cu13 unpacked: $(du -sh /tmp/site2 | cut -f1)" \
  || echo "unpack FAILED"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site3 .whl-peers/c3q/*.whl \
  > "$OUT/c3q_install.txt" 2>&1 && echo "c3q installed into /tmp/site3" || echo "c3q install FAILED (c3q_install.txt)"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
