#!/usr/bin/env bash
# Device call 4 (this session), on call 3's warm machine: quack's wheels installed in one pip command
# (installing nvidia-cutlass-dsl-libs-cu13 on its own with --target --upgrade replaced the
# nvidia_cutlass_dsl folder of the other cutlass wheels: `No module named cutlass.cutlass_dsl`), then
# the catalog tasks quack serves, with every peer in the same run.
# carry: .whl-peers/p/<libs-cu13>.part-01 .part-02 .sha256
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/catalog"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-330} - ($(date +%s) - start) )); }
st=/tmp/whl-peers-stash
cp .whl-peers/p/*.part-01 .whl-peers/p/*.part-02 .whl-peers/p/*.sha256 $st/ || exit 1
whl=$(basename $st/*.sha256 .sha256)
(cd $st && cat "$whl".part-0* > "$whl" && sha256sum -c "$whl.sha256") | tee "$OUT/wheel.txt" || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_q "$st/$whl" \
  .whl-peers/c1/nvidia_cutlass*.whl .whl-peers/c1/quack*.whl .whl-peers/c1/apache_tvm*.whl .whl-peers/c1/torch_c_dlpack*.whl || exit 1
export PYTHONPATH=/tmp/site_q:/tmp/site_q/nvidia_cutlass_dsl/dsl_packages:/tmp/site:$PWD/src
export KERNELCRAFT_CACHE=/tmp/kc_cache
ls /tmp/site_q/nvidia_cutlass_dsl | tee -a "$OUT/wheel.txt"; cat /tmp/site_q/*.pth 2>/dev/null | tee -a "$OUT/wheel.txt"
python3 -c "import quack, liger_kernel, fla; print('quack', quack.__version__)" 2>&1 | tail -3 | tee -a "$OUT/wheel.txt"
clean() { grep -v "leaked\|nanobind\|skipped rem\|refleaks\|Warning"; }
for t in ${TASKS:-softmax rmsnorm cross_entropy layernorm fused_add_rmsnorm}; do
  l=$(left); [ "$l" -lt 45 ] && { echo "=== no time for $t"; continue; }
  echo "=== $t ($l s left)"
  timeout $(( l - 10 )) python3 -m kernelcraft eval tasks/$t --device cuda --peers --budget-ms 100 --no-confirm \
    --json "$OUT/catalog/$t.json" > "$OUT/catalog/$t.log" 2>&1
  echo "rc $?"
  clean < "$OUT/catalog/$t.log" | grep -A12 "x best peer" | head -12
done 2>&1 | tee "$OUT/catalog.txt"
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
