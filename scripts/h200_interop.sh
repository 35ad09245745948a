#!/usr/bin/env bash
# One device call (issue 27): FlashInfer-Trace's real solutions built and run on the H200, a verdict each.
#
# The dataset travels in a carried, git-ignored folder (never committed). Prepare it here first:
#   bash scripts/fib_dataset.sh /work/.mirror/flashinfer-ai+flashinfer-bench/repo .datasets/fib
# (156 definitions, 26 with workloads, 41 CUDA solutions of FlashInfer-Bench's own gpt-5.2 run), put the
# cp312 wheels in .whl/ as AGENTS.md says (plus apache-tvm-ffi for the tvm-ffi check below:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
#   --platform manylinux_2_28_x86_64 -d .whl apache-tvm-ffi==0.1.15.post2), then run with
#   carry: [".datasets/fib", ".whl"]   command: bash scripts/h200_interop.sh .datasets/fib
#
# What it does (about 5 minutes): imports the dataset (26 task folders), evaluates each task's
# reference and solutions on the GPU, correctness only (--no-timing: the build, the checks on three
# workloads spread over the task's sizes, holdouts, determinism, the static gate with
# cudaDeviceSynchronize allowed), eight evals side by side, each torch-extension build limited to
# MAX_JOBS=2 compiler processes; then kernelcraft's own tvm-ffi CUDA fixture (build, link, run).
# Output: $OUT/out.tgz holding records/<task>.json, summary.json (a verdict per solution) and the logs;
# unpack it into results/h200/interop/.
# Expected: "26 converted" on import; every reference ("baseline") PASSED; each of the 26 solutions
# with a verdict (PASSED, INCORRECT_*, RUNTIME_ERROR, COMPILE_ERROR or REJECTED with its reason), none
# REJECTED by the static gate for cudaDeviceSynchronize; tvm_ffi_cuda_gemm PASSED.
set -u
DATASET=${1:?the FlashInfer-Trace dataset folder (carried), e.g. .datasets/fib}
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export KERNELCRAFT_CACHE=/tmp/kc_interop_cache
export MAX_JOBS=2  # torch extension builds: two compiler processes each, eight builds side by side
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
start=$(date +%s)
timeout 280 python3 scripts/interop_run.py fib "$DATASET" --out /tmp/interop --device cuda --jobs 8 \
  --workloads-per-task 3 --eval-timeout 240 2>&1 | tee "$OUT/interop.log"
echo "dataset run: $(( $(date +%s) - start )) s" | tee -a "$OUT/interop.log"
python3 scripts/interop_run.py fib tests/fixtures/fib_trace --out /tmp/interop_fixture --import-only > "$OUT/fixture.log" 2>&1
# the fixture sampler's reference samples row by row in Python: 4000 draws per row, not FlashInfer-Bench's 500000
printf 'samples_per_row = 4000\nbatch_rows = 300\n' >> /tmp/interop_fixture/tasks/top_k_top_p_sampling_from_probs_v32/contract.toml
timeout 50 python3 scripts/interop_run.py fib tests/fixtures/fib_trace --out /tmp/interop_fixture --device cuda \
  --skip-import --jobs 4 --eval-timeout 45 2>&1 | tee -a "$OUT/fixture.log"
mkdir -p "$OUT/dataset" "$OUT/fixture"
cp -r /tmp/interop/records /tmp/interop/summary.json /tmp/interop/import.log "$OUT/dataset/" 2>/dev/null
cp -r /tmp/interop_fixture/records /tmp/interop_fixture/summary.json "$OUT/fixture/" 2>/dev/null
python3 - <<'PY' | tee "$OUT/verdicts.txt"
import json
s = json.load(open("/tmp/interop/summary.json"))
for t in s["tasks"]:
    for r in t.get("rows", []):
        print(f"{t['task'][:48]:48s} {r['name'][:60]:60s} {r['status']:20s} {r['gate'] or '':12s} {r['reason'][:160]}")
    if "error" in t:
        print(f"{t['task'][:48]:48s} {'-':60s} {'EVAL FAILED':20s} {t['error'][:160]}")
print(json.dumps(s["counts"]))
PY
[ -n "${KC_NO_PACK:-}" ] || bash scripts/pack_out.sh
