#!/usr/bin/env bash
# Session 31 (<= 400 s, any one-GPU kind). carry: [".whl"]   command: DEADLINE=380 bash scripts/gpu_s31_check.sh
# The red team's fixes (session 31: outputs normalized inside the timed call, plain values only, mode stacks and
# hooks checked, hooks cleared by the clock, views with attributes refused, inputs compared after timed calls)
# change the runner's timed path, on a GPU first exercised here: the GPU tests of an honest catalog kernel with
# timing (no false rejection) and of the integrity fixtures, then the adversarial fixtures judged on the GPU
# (static gate off, as the CPU batch runs them), each verdict beside the CPU one of expected.toml.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-380} - ($(date +%s) - start) )); }
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
TESTS_S=$(( $(left) / 2 )) bash scripts/gpu_tests.sh \
  tests/test_gpu_measure.py::test_catalog_rmsnorm_has_no_false_rejection_with_timing \
  tests/test_gpu_measure.py::test_integrity_fixtures_of_this_session_on_gpu \
  tests/test_gpu_measure.py::test_side_stream_work_is_seen_as_escaped
l=$(left)
if [ "$l" -gt 60 ]; then
  echo "=== adversarial fixtures on the GPU ($l s left)"
  A=tests/fixtures/adversarial
  KERNELCRAFT_TEST_NO_STATIC_GATE=1 timeout $(( l - 15 )) python3 -m kernelcraft eval tasks/rmsnorm \
    tasks/rmsnorm/solutions/triton_rowwise.py $A/lazy_outputs.py $A/mutates_inputs_when_timed.py \
    $A/function_mode_defers_work.py $A/trace_hook_defers_work.py $A/finalizer_precomputes.py \
    $A/thread_finishes_timed_outputs.py $A/cheats_when_timed.py \
    --device cuda --budget-ms 20 --no-peers --json "$OUT/adversarial_gpu.json" > "$OUT/adversarial_gpu.log" 2>&1
  echo "rc $?"
  python3 - "$OUT/adversarial_gpu.json" <<'PY' 2>&1 | tee "$OUT/adversarial_gpu.txt"
import json, sys, tomllib
exp = tomllib.load(open("tests/fixtures/adversarial/expected.toml", "rb"))
for s in json.load(open(sys.argv[1]))["solutions"]:
    e = exp.get(s["name"], {})
    print(s["name"], s["status"], "(CPU batch expects", e.get("status", "-") + ")", (s.get("reason") or "")[:200])
PY
fi
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
