#!/usr/bin/env bash
# Device call 1 of 2 on one warm H200 (2026-12-01, third session): Nsight Compute's confirmation.
# 1. what ncu adds to its target's environment; 2. a profiled runner built under ncu with the
# sandbox as is, then leaving out one mechanism at a time (scripts/probe_ncu_runner.py), stopping at
# the first that builds; the choice is kept in /tmp/ncu_chosen for call 2; 3. rmsnorm's Triton
# candidate through `eval` with the baseline and the confirmation; 4. the GPU tests of the timer and
# the gates. Also stashes part 00 of the quack libs wheel for call 2 (scripts/h200_s3_call2.sh).
# carry: .whl .whl-peers/c1 .whl-peers/p/<libs-cu13>.part-00
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-570} - ($(date +%s) - start) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl/*.whl .whl-peers/c1/*.whl || exit 1
mkdir -p /tmp/whl-peers-stash && cp .whl-peers/p/*.part-00 /tmp/whl-peers-stash/
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD/src KERNELCRAFT_CACHE=/tmp/kc_cache
clean() { grep -v "leaked\|nanobind\|skipped rem\|refleaks\|Warning"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
echo "=== ncu's additions to a target's environment" | tee "$OUT/ncu_env.txt"
env | sort > /tmp/e0
timeout 60 ncu --target-processes all env 2>&1 | sort > /tmp/e1
comm -13 /tmp/e0 /tmp/e1 | cut -c1-240 | tee -a "$OUT/ncu_env.txt"
: > /tmp/ncu_chosen
for v in "" uid landlock "uid,landlock" "uid,landlock,caps,rlimits,env"; do
  echo "=== variant [$v]"
  KERNELCRAFT_PROFILED_SANDBOX_SKIP="$v" timeout 75 python3 scripts/probe_ncu_runner.py /tmp/ncu_probe.csv > /tmp/probe1.txt 2>&1
  rc=$?
  clean < /tmp/probe1.txt | tail -30
  echo "rc $rc"
  if [ $rc -eq 0 ]; then echo "$v" > /tmp/ncu_chosen; echo "chosen [$v]"; break; fi
done 2>&1 | tee "$OUT/probe.txt"
export KERNELCRAFT_PROFILED_SANDBOX_SKIP=$(cat /tmp/ncu_chosen)
echo "=== smoke with KERNELCRAFT_PROFILED_SANDBOX_SKIP=[$KERNELCRAFT_PROFILED_SANDBOX_SKIP] ($(left) s left)"
timeout 200 python3 -m kernelcraft eval tasks/rmsnorm tasks/rmsnorm/solutions/triton_rowwise.py --device cuda \
  --with-baseline --no-peers --json "$OUT/smoke_rmsnorm.json" 2>&1 | clean | tail -14 | tee "$OUT/smoke.log"
python3 - "$OUT/smoke_rmsnorm.json" <<'PY' | tee -a "$OUT/smoke.log"
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["solutions"]:
    print(s["name"], s["status"], s.get("gate"), s.get("promoted"), (s.get("reason") or "")[:900])
    print("  sandbox:", json.dumps(s.get("sandbox")))
    print("  confirmation:", json.dumps(s.get("confirmation"))[:1500])
PY
l=$(left)
if [ "$l" -gt 60 ]; then
  echo "=== GPU tests ($l s left)"
  timeout $(( l - 15 )) python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_measure.py tests/test_holdouts.py \
    "tests/test_gpu.py::test_catalog_passes_on_gpu[rmsnorm]" 2>&1 | clean | tail -25 | tee "$OUT/test_gpu.log"
fi
echo "=== done in $(( $(date +%s) - start )) s"
