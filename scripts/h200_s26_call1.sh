#!/usr/bin/env bash
# Session 26, first call (<= 590 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1", ".whl-peers/c3",
# ".kernelcraft/flashinfer-cache"]                                command: bash scripts/h200_s26_call1.sh
# On an H200: the catalog's chain call 1 under the `--trusted-timing auto` default (scripts/h200_s19_chain1.sh with
# CONFIRM=--confirm; calls 2-4 follow on the warm machine), then the race hunt below in what is left.
# On anything else (an H100), or with FORCE_HUNT=1: the race check with the whole call (SKIP_STAGE=1: without the
# reproducer and the stage determinism, i.e. survey, eval and split only; carry [".whl", ".whl-peers/c1"] then).
# Race check (issue 23, gdn_prefill): scripts/triton_pipeline_lint.py read the race in Triton 3.6's TTGIR (a
# two-buffer pipelined Gram loop zero-filling the buffer an async wgmma still reads); chunk5 / chunk6 now run those
# loops with num_stages=1. scripts/stage_determinism.py on chunk5, chunk6, chunk5 as it was (the racy loops, made
# here by sed) and chunk2 (deterministic in session 25): every buffer compared between calls. Then the GPU error
# survey of chunk5 / chunk6, `kernelcraft eval` of both with FLA and the confirmation (H100 branch; the H200 branch
# leaves it to a later call), and the split if time is left.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-585} - ($(date +%s) - start) )); }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $gpu"
if [[ "$gpu" == *H200* ]] && [ "${FORCE_HUNT:-0}" != 1 ]; then
  echo "=== H200: chain call 1 (topk, silu_mul, gelu_tanh_mul; --confirm)"
  CONFIRM=--confirm DEADLINE=${CHAIN_DEADLINE:-330} OUT="$OUT" bash scripts/h200_s19_chain1.sh > "$OUT/chain1.txt" 2>&1
  tail -40 "$OUT/chain1.txt" | cut -c1-200
  # chain1 packed its files into out.tgz: keep it apart from the hunt's
  [ -f "$OUT/out.tgz" ] && mv "$OUT/out.tgz" "$OUT/chain1.tgz"
  export PYTHONPATH=/tmp/fi-cache:/tmp/site:$PWD/src
  # device time is short (session 26): on the H200 only the reproducer here, the catalog's calls 2-4 next
  echo "=== the smallest racy loop (scripts/triton_race_repro.py)"
  timeout 45 python3 scripts/triton_race_repro.py --programs 4096 --calls 30 2>&1 | tee "$OUT/race_repro.txt"
  [ "${H200_HUNT:-0}" = 1 ] || { echo "=== done in $(( $(date +%s) - start )) s"; bash scripts/pack_out.sh; exit 0; }
else
  source scripts/device_wheels.sh
  PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 \
    || echo "peer wheels: install failed (see peer_wheels.log)"
fi
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
G=tasks/gdn_prefill/candidates; C5=$G/triton_chunk5.py; C6=tasks/gdn_prefill/solutions/triton_chunk6.py  # candidates/ until its promotion after call 2
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
mkdir -p /tmp/c5r && sed 's/, num_stages=1):  # never pipelined.*$/):/' $C5 > /tmp/c5r/triton_chunk5_racy.py
grep -c "num_stages=1" $C5 /tmp/c5r/triton_chunk5_racy.py
if [ "${SKIP_STAGE:-0}" != 1 ]; then
  echo "=== the smallest racy loop (scripts/triton_race_repro.py)"
  timeout 60 python3 scripts/triton_race_repro.py --programs 4096 --calls 50 2>&1 | quiet | tee "$OUT/race_repro.txt"
  l=$(left); echo "=== stage determinism ($l s left)"; t0=$(date +%s)
  timeout $(( l < 220 ? l - 10 : 210 )) python3 scripts/stage_determinism.py --task gdn_prefill --workloads 32bd0dca,d790aa8b \
    $C5 $C6 /tmp/c5r/triton_chunk5_racy.py $G/triton_chunk2.py --out "$OUT/stage_det.json" 2>&1 | quiet | tee "$OUT/stage_det.txt"
  echo "stage determinism: $(( $(date +%s) - t0 )) s"
fi
l=$(left)
if [ "$l" -gt 100 ]; then
  echo "=== GPU errors of chunk5 / chunk6 ($l s left)"; t0=$(date +%s)
  timeout $(( l < 200 ? l / 2 : 100 )) python3 scripts/la_gpu_errors.py --task gdn_prefill --seeds 2 --no-peer $C5 $C6 \
    --out "$OUT/gdn_gpu_errors.json" 2>&1 | quiet | tee "$OUT/gdn_gpu_errors.txt"
  echo "survey: $(( $(date +%s) - t0 )) s"
fi
l=$(left)
if [ "$l" -gt 150 ]; then
  echo "=== tasks/gdn_prefill chunk5 chunk6 ($l s left)"; t0=$(date +%s)
  timeout $(( l - 60 )) python3 -m kernelcraft eval tasks/gdn_prefill $C5 $C6 --device cuda --peers --budget-ms 50 --confirm \
    --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/gdn_prefill.log" | tail -25 | cut -c1-220
fi
l=$(left)
if [ "$l" -gt 45 ]; then
  echo "=== split ($l s left)"; t0=$(date +%s)
  timeout $(( l - 10 )) python3 scripts/gdn_prefill_split.py --task gdn_prefill --solution $C5 --solution $C6 \
    --workloads 32bd0dca,72e2d95a,d790aa8b --calls 10 --out "$OUT/gdn_split.json" 2>&1 | quiet | tee "$OUT/gdn_split.txt"
  echo "split: $(( $(date +%s) - t0 )) s"
fi
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
