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
  bash scripts/adversarial_gpu.sh $(( l - 15 )) lazy_outputs mutates_inputs_when_timed function_mode_defers_work \
    trace_hook_defers_work finalizer_precomputes thread_finishes_timed_outputs cheats_when_timed
fi
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
