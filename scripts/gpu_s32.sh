#!/usr/bin/env bash
# Session 32 (<= 590 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1", ".whl-diag"]
#   command: DEADLINE=580 bash scripts/gpu_s32.sh   (its first call of the session after scripts/h200_s32_stash.sh on an H100)
# Session 31's two plans in one call, for a session whose starts are refused more often than not:
# 1. the red team's runner changes on a GPU for the first time (scripts/gpu_s31_check.sh's three GPU tests: an
#    honest catalog kernel timed without a false rejection, the integrity fixtures, side-stream work), at most
#    TESTS_S (default 150 s);
# 2. gdn chunk10 (the one-launch `_recur` short path) judged beside both FLA peers, as scripts/la_s31.sh's first
#    task (TASKS=gdn_prefill, FIRST_S unused), with what is left less ADV_S;
# 3. with what is left (>= 60 s): the adversarial fixtures judged on cuda (static gate off), each verdict beside
#    expected.toml's CPU one (scripts/gpu_s31_check.sh's second half).
# Session 32's runner changes (red team round 4: audit hooks refused, the cyclic collector off in a candidate's
# runner, query ops exempt only where compiled, class methods watched) run on a GPU here first, in all three.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - start) )); }
quiet() { grep -v "Warning\|warn(\|leaked\|nanobind"; }
source scripts/device_wheels.sh
PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small > "$OUT/peer_wheels.log" 2>&1 || echo "peer wheels: install failed"
pip install -q --no-index --target /tmp/pyspy .whl-diag/py_spy-*.whl > "$OUT/pyspy.log" 2>&1; export PATH=/tmp/pyspy/bin:$PATH
export KERNELCRAFT_CACHE=/tmp/kc_cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
echo "=== GPU tests ($(left) s left)"
TESTS_S=${TESTS_S:-150} bash scripts/gpu_tests.sh \
  tests/test_gpu_measure.py::test_catalog_rmsnorm_has_no_false_rejection_with_timing \
  tests/test_gpu_measure.py::test_integrity_fixtures_of_this_session_on_gpu \
  tests/test_gpu_measure.py::test_side_stream_work_is_seen_as_escaped
lim=$(( $(left) - ${ADV_S:-70} ))
if [ "$lim" -ge 250 ]; then
  GDN=tasks/gdn_prefill/candidates/triton_chunk10.py; [ -f "$GDN" ] || GDN=tasks/gdn_prefill/solutions/triton_chunk10.py  # promoted after this run
  echo "=== gdn_prefill: chunk10 beside both peers (limit $lim s)"; t0=$(date +%s)
  AT=$(( lim - 20 )) FILE="$OUT/stacks_gdn_prefill.txt" bash scripts/dump_stacks.sh "$lim" python3 -m kernelcraft eval \
    tasks/gdn_prefill "$GDN" --device cuda --peers --budget-ms 200 --confirm \
    --json "$OUT/gdn_prefill.json" > "$OUT/gdn_prefill.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"; quiet < "$OUT/gdn_prefill.log" | grep -v "^  [a-z_.:0-9]*: [a-z]" | tail -30 | cut -c1-200
else
  echo "=== gdn_prefill: no time ($lim s)"
fi
l=$(left)
if [ "$l" -gt 60 ]; then
  echo "=== adversarial fixtures on the GPU ($l s left)"
  bash scripts/adversarial_gpu.sh $(( l - 15 )) lazy_outputs mutates_inputs_when_timed function_mode_defers_work \
    trace_hook_defers_work finalizer_precomputes thread_finishes_timed_outputs cheats_when_timed audit_hook_defers \
    gc_finalizer_defers query_op_hides_torch patches_clock_class enum_writes_runner_globals
fi
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
