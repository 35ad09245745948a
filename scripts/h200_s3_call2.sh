#!/usr/bin/env bash
# Device call 2 of 2, on the machine call 1 (scripts/h200_s3_call1.sh) left warm: the quack libs
# wheel joined from its three parts (part 00 stashed by call 1) and checked, then the catalog tasks
# with their peers in the same run (torch.compile static per shape, Liger, FLA, quack; FlashInfer's
# JIT does not fit a call), and Nsight Compute's confirmation with call 1's choice of sandbox.
# carry: .whl-peers/p/<libs-cu13>.part-01 .part-02 .sha256
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/catalog"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-575} - ($(date +%s) - start) )); }
st=/tmp/whl-peers-stash
cp .whl-peers/p/*.part-01 .whl-peers/p/*.part-02 .whl-peers/p/*.sha256 $st/ || exit 1
whl=$(basename $st/*.sha256 .sha256)
(cd $st && cat "$whl".part-0* > "$whl" && sha256sum -c "$whl.sha256") | tee "$OUT/wheel.txt" || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$st/$whl" || exit 1
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD/src KERNELCRAFT_CACHE=/tmp/kc_cache
export KERNELCRAFT_PROFILED_SANDBOX_SKIP=$(cat /tmp/ncu_chosen 2>/dev/null)
clean() { grep -v "leaked\|nanobind\|skipped rem\|refleaks\|Warning"; }
python3 -c "import quack, liger_kernel, fla; print('quack', quack.__version__)" 2>&1 | tail -2 | tee -a "$OUT/wheel.txt"
for t in ${TASKS:-rmsnorm softmax cross_entropy fused_add_rmsnorm layernorm silu_mul gelu_tanh_mul rope}; do
  l=$(left); [ "$l" -lt 60 ] && { echo "=== no time for $t"; continue; }
  echo "=== $t ($l s left)"
  timeout $(( l - 15 )) python3 -m kernelcraft eval tasks/$t --device cuda --peers --budget-ms 100 \
    --json "$OUT/catalog/$t.json" > "$OUT/catalog/$t.log" 2>&1
  echo "rc $?"
  clean < "$OUT/catalog/$t.log" | grep -A16 "x best peer" | head -16
done 2>&1 | tee "$OUT/catalog.txt"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
