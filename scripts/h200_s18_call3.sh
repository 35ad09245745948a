#!/usr/bin/env bash
# Session 18, device call 3, right after call 2 on the same warm machine (<= 590 s). carry:
# [".whl-peers/parts/<libs-cu13>.part-02", ".whl-peers/parts/<libs-cu13>.sha256"]   command: bash scripts/h200_s18_call3.sh
# Joins the cutlass-cu13 wheel from the three parts (sha256 of each part and of the wheel checked), installs it, then
# `kernelcraft eval` (static torch.compile, every peer: quack, Liger, FLA, FlashInfer, torch) of the catalog tasks
# with a quack peer: softmax, fused_add_rmsnorm, layernorm, rmsnorm, rope, cross_entropy (call 2's sweep picks beside
# the promoted kernels). TASKS=... to run a subset in a call 4.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
S=/tmp/whl-peers-stash
if [ ! -f /tmp/site/.cutlass-cu13-installed ]; then
  ( mkdir -p $S && cp .whl-peers/parts/* $S/ && cd $S && for sums in *.sha256; do whl=${sums%.sha256};
      [ -f "$whl" ] || cat "$whl".part-* > "$whl"; sha256sum -c "$sums" || exit 1; done
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $S/*.whl \
      && touch /tmp/site/.cutlass-cu13-installed ) > "$OUT/peer_install.txt" 2>&1 || echo "cutlass-cu13 install FAILED (peer_install.txt)"
fi
export PYTHONPATH=/tmp/fi-cache:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD/src FLASHINFER_DISABLE_JIT=1
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 - <<'PY' 2>&1 | grep -v Warning | tee "$OUT/peers_import.txt"
import site, os
for e in os.environ.get("PYTHONPATH", "").split(":"):
    if e and os.path.isdir(e) and any(f.endswith(".pth") for f in os.listdir(e)):
        site.addsitedir(e)
for m in ("quack", "liger_kernel", "fla", "flashinfer", "cutlass"):
    try:
        mod = __import__(m); print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "FAILED", type(e).__name__, str(e)[:200])
PY
TASKS=${TASKS:-softmax fused_add_rmsnorm layernorm rmsnorm rope cross_entropy} DEADLINE=$(( ${DEADLINE:-580} - ($(date +%s) - start) )) \
  OUT=$OUT bash scripts/s18_evals_part.sh
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
