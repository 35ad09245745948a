#!/usr/bin/env bash
# Session 17, device call "evals" (<= 580 s), right after the sweep call on the same warm machine. carry:
# [".whl", ".whl-peers/c3", ".whl-peers/parts/<libs-cu13>.part-02", ".whl-peers/parts/<libs-cu13>.sha256",
# ".kernelcraft/flashinfer-cache"] (c3: small/ less Liger and FLA, which the sweep call installed; 64 MiB a call)
#   command: bash scripts/h200_s17_evals.sh
# Joins the cutlass-cu13 wheel from the parts stashed by the two calls before (sha256 checked), installs every peer
# (quack, Liger, FLA, FlashInfer), then `kernelcraft eval` per task: the promoted solution and the two best variants
# of the sweep call (scripts/sweep_pick.py over /tmp/sweep), every peer that imports, static torch.compile, in one
# run each. Records to $OUT/catalog/<task>.json; the picked variant files come back in $OUT/picked/<task>/.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/catalog" "$OUT/picked"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-570} - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
PEER_WHEELS=${PEER_WHEELS:-.whl-peers/c3} source scripts/peer_wheels.sh install > "$OUT/peer_install.txt" 2>&1 || echo "peer install FAILED (see peer_install.txt)"
# FlashInfer's modules prebuilt for sm_90a on the CPU machine (scripts/flashinfer_prebuild.sh): loaded through its
# prebuilt path (a flashinfer_jit_cache stand-in), no nvcc here; a module not prebuilt fails at once, not after a JIT
if [ -d .kernelcraft/flashinfer-cache ]; then
  export PYTHONPATH=$PWD/.kernelcraft/flashinfer-cache:$PYTHONPATH FLASHINFER_DISABLE_JIT=1
  ldd --version | head -1 > "$OUT/glibc.txt"
fi
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
declare -A PROMOTED=([softmax]=triton_online.py [silu_mul]=triton_tiled.py [gelu_tanh_mul]=triton_tiled.py
  [fused_add_rmsnorm]=triton_rowwise.py [layernorm]=triton_dispatch.py [rmsnorm]=triton_dps [rope]=triton_tokens.py)
clean() { grep -v "leaked\|nanobind\|skipped rem\|refleaks\|Warning"; }
for t in ${TASKS:-softmax fused_add_rmsnorm layernorm silu_mul gelu_tanh_mul}; do
  l=$(left); [ "$l" -lt 50 ] && { echo "=== no time for $t"; continue; }
  picks=()
  if [ -f /tmp/sweep/sweep_$t.json ]; then
    mkdir -p "$OUT/picked/$t"
    python3 scripts/sweep_pick.py /tmp/sweep/sweep_$t.json /tmp/sweep/variants/$t -n ${PICKS:-2} > "$OUT/picked/$t/why.txt"
    while read -r f; do case "$f" in "#"*|"") ;; *) cp "$f" "$OUT/picked/$t/"; picks+=("$f");; esac; done < "$OUT/picked/$t/why.txt"
  fi
  echo "=== $t ($l s left): ${PROMOTED[$t]} ${picks[*]}"
  timeout $(( l - 10 )) python3 -m kernelcraft eval tasks/$t tasks/$t/solutions/${PROMOTED[$t]} "${picks[@]}" \
    --with-baseline --device cuda --peers --budget-ms ${BUDGET_MS:-100} --no-confirm \
    --json "$OUT/catalog/$t.json" > "$OUT/catalog/$t.log" 2>&1
  echo "rc $?"
  clean < "$OUT/catalog/$t.log" | grep -B2 -A14 "x best peer" | head -24 | cut -c1-250
done 2>&1 | tee "$OUT/catalog.txt"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
