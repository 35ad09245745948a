#!/usr/bin/env bash
# GPU-marked tests on the device machine, one pytest each with its own limit (a single `timeout` over many
# killed the run mid-way and printed only `...FFFF`: AGENTS.md), each one's whole output kept:
#   TESTS_S=300 bash scripts/gpu_tests.sh TEST_ID...   -> $OUT/gpu_tests/<name>.txt, SUMMARY.txt (exit code, seconds)
# Each test gets at most 110 s and what is left of TESTS_S; a test with under 20 s left is skipped, saying so.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/gpu_tests"
start=$(date +%s)
TESTS_S=${TESTS_S:-300}
for t in "$@"; do
  left=$(( TESTS_S - ($(date +%s) - start) ))
  [ "$left" -lt 20 ] && { echo "skipped (time): $t" | tee -a "$OUT/gpu_tests/SUMMARY.txt"; continue; }
  lim=$(( left < 110 ? left : 110 ))
  n=$(echo "$t" | sed 's/.*:://; s/[][]/_/g; s|/|_|g')  # a test id or a whole file (tests/x.py -> tests_x.py)
  t1=$(date +%s)
  timeout "$lim" python3 -m pytest -q -m gpu -rA -p no:cacheprovider "$t" > "$OUT/gpu_tests/$n.txt" 2>&1
  rc=$?
  echo "$rc $(( $(date +%s) - t1 ))s $t" | tee -a "$OUT/gpu_tests/SUMMARY.txt"; tail -2 "$OUT/gpu_tests/$n.txt"
done
