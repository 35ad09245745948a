#!/usr/bin/env bash
# Session 18, device call 1 of a chain on one warm machine (<= 420 s). carry: [".whl", ".whl-peers/c1",
# ".whl-peers/c3", ".whl-peers/parts/<libs-cu13>.part-00"]        command: bash scripts/h200_s18_call1.sh
# Installs the base wheels and every small peer wheel into /tmp/site (kept for the next calls), stashes the first
# part of the cutlass-cu13 wheel (scripts/peer_wheels.txt: three parts this session), then
#  1. Nsight Compute at one decode workload per catalog task, the new candidate beside Liger's kernel
#     (`kernelcraft profile`; a design diagnostic, never a verdict): what the 0.2-1.2 us decode gaps are;
#  2. issue 23's decode end-to-end record again, now with gdn_decode's triton_decode_knobs_bybatch exported from
#     results/h200/gdn_decode.json (`PHASES=decode bash scripts/h200_e2e_qwen3next.sh`).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-410} - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
source scripts/peer_wheels.sh stash > "$OUT/stash.txt" 2>&1 || echo "stash FAILED"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl-peers/c1/*.whl .whl-peers/c3/*.whl > "$OUT/peer_install.txt" 2>&1 || echo "peer install FAILED"
export PYTHONPATH=/tmp/site:$PWD/src KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
V=/tmp/s18v; mkdir -p $V
python3 scripts/config_variants.py tasks/layernorm/candidates/triton_onepass.py $V/layernorm '{"SMALL_ELEMS_PER_THREAD": 8}' > /dev/null
python3 scripts/config_variants.py tasks/fused_add_rmsnorm/candidates/triton_static.py $V/fused_add_rmsnorm '{"SMALL_PIN": false}' > /dev/null
python3 scripts/config_variants.py tasks/softmax/candidates/triton_split.py $V/softmax '{"SPLIT_MAX_ROWS": 1}' > /dev/null
prof() {  # task workload-prefix name file
  local l; l=$(left); [ "$l" -lt 200 ] && { echo "no time: profile $1 $3"; return; }
  local t0=$(date +%s)
  timeout 75 python3 -m kernelcraft profile tasks/$1 "$4" --workload "$2" --device cuda --out "$OUT/profiles/$1/$3" \
    > "$OUT/profiles/$1-$3.txt" 2>&1
  echo "== profile $1 $3: rc=$? $(( $(date +%s) - t0 )) s"; grep -iE "duration|dram|occupancy|stall|regist|limit" "$OUT/profiles/$1-$3.txt" | head -12 | cut -c1-200
}
mkdir -p "$OUT/profiles"
prof layernorm 53da47ba triton_onepass_v0 $V/layernorm/triton_onepass_v0.py
prof layernorm 53da47ba liger tasks/layernorm/peers/liger.py
prof fused_add_rmsnorm 883644e5 triton_static_v0 $V/fused_add_rmsnorm/triton_static_v0.py
prof fused_add_rmsnorm 883644e5 liger tasks/fused_add_rmsnorm/peers/liger.py
prof softmax 30d80a5c triton_split_v0 $V/softmax/triton_split_v0.py
prof softmax 30d80a5c liger tasks/softmax/peers/liger.py
prof silu_mul 5762b27f triton_stream tasks/silu_mul/candidates/triton_stream.py
prof silu_mul 5762b27f liger tasks/silu_mul/peers/liger.py
l=$(left)
if [ "$l" -gt 150 ]; then
  mkdir -p "$OUT/e2e"
  OUT=$OUT/e2e KC_NO_PACK=1 PHASES=decode DEADLINE_S=$(( l - 10 )) DECODE_SOL=triton_decode_knobs_bybatch \
    PEER_WHEELS=.whl-peers/c1 bash scripts/h200_e2e_qwen3next.sh 2>&1 | tail -30
else
  echo "no time for the e2e decode record ($l s left)"
fi
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
