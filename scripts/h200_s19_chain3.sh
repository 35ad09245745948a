#!/usr/bin/env bash
# SUPERSEDED by scripts/h200_s20_chain4.sh: this one installs from .whl-peers/c3, which its call does not carry.
# Session 19, chain call 3 of 3, within 30 s of call 2 (<= 560 s). carry:
# [".whl-peers/halves/<libs-cu13>.part-01", ".whl-peers/halves/<libs-cu13>.sha256"]
#   command: bash scripts/h200_s19_chain3.sh
# Joins nvidia-cutlass-dsl-libs-cu13 from the two halves (sha256 of each and of the wheel checked) and installs it
# with the other cutlass wheels in ONE pip command (session 18: a second `pip --target --upgrade` wiped the first's
# folder); stops if quack does not import; then the catalog tasks with a quack peer (scripts/s19_catalog_evals.sh).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
S=/tmp/whl-halves
( cp .whl-peers/halves/*.part-01 .whl-peers/halves/*.sha256 $S/ && cd $S && for sums in *.sha256; do whl=${sums%.sha256};
    [ -f "$whl" ] || cat "$whl".part-* > "$whl"; sha256sum -c "$sums" || exit 1; done ) > "$OUT/join.txt" 2>&1 \
  || { echo "join FAILED"; cat "$OUT/join.txt"; bash scripts/pack_out.sh; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl-peers/c3/nvidia_cutlass*.whl .whl-peers/c3/quack*.whl $S/*.whl > "$OUT/cutlass_install.txt" 2>&1 \
  || echo "cutlass install FAILED (cutlass_install.txt)"
export PYTHONPATH=/tmp/fi-cache:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD/src FLASHINFER_DISABLE_JIT=1
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 - <<'PY' 2>&1 | grep -v Warning | tee "$OUT/peers_import.txt"
import os, site
for e in os.environ.get("PYTHONPATH", "").split(":"):
    if e and os.path.isdir(e) and any(f.endswith(".pth") for f in os.listdir(e)):
        site.addsitedir(e)
for m in ("quack", "liger_kernel", "fla", "flashinfer", "cutlass"):
    try:
        mod = __import__(m); print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "FAILED", type(e).__name__, str(e)[:200])
PY
grep -q "^quack FAILED" "$OUT/peers_import.txt" && { echo "quack does not import: stopping"; bash scripts/pack_out.sh; exit 1; }
TASKS="${TASKS:-fused_add_rmsnorm rmsnorm softmax layernorm rope cross_entropy}" \
  DEADLINE=$(( ${DEADLINE:-550} - ($(date +%s) - start) )) bash scripts/s19_catalog_evals.sh
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
