#!/usr/bin/env bash
# The test command, as .ci/run runs it after installing: the linter, then the test suite.
#   scripts/test.sh                          # everything
#   scripts/test.sh tests/test_export.py -x  # arguments go to pytest
# Some tests need what pip does not install; without it they skip, each saying why:
#   - PostgreSQL (Debian: apt-get install postgresql): the PostgreSQL variants of tests/test_web_api.py
#     and tests/test_web_migrations.py. When it is installed, a throwaway server runs for this call.
#   - Chromium (Debian: apt-get install chromium): tests/test_web_browser.py (Playwright drives it).
#   - flashinfer-bench (pip install --no-deps flashinfer-bench==0.1.2 docstring-parser): the trace
#     and dataset round trips of tests/test_interop_fib.py and tests/test_export.py.
#   - flash-linear-attention in a folder of its own (pip install --no-deps --target .kernelcraft/fla-interpreted
#     fla-core==0.6.0 flash-linear-attention==0.6.0 einops): tests/test_peers_fla_interpreted.py.
#   - a CUDA GPU: the tests marked `gpu`.
# KC_TEST_REQUIRE_ALL=1 (.ci/run sets it) makes a missing PostgreSQL, Chromium, flashinfer-bench or FLA an
# error instead of a skip: in CI those tests must run.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
if [ -z "${KERNELCRAFT_TEST_POSTGRES:-}" ]; then
  if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; then
    if pg_env=$(scripts/postgres_for_tests.sh start); then
      eval "$pg_env"
      trap 'scripts/postgres_for_tests.sh stop' EXIT
    else
      missing+=("a PostgreSQL server (installed, but it did not start: see above)")
    fi
  else
    missing+=("PostgreSQL")
  fi
fi
if [ -z "${KERNELCRAFT_CHROMIUM:-}" ]; then
  if command -v chromium >/dev/null; then
    KERNELCRAFT_CHROMIUM=$(command -v chromium)
    export KERNELCRAFT_CHROMIUM
  else
    missing+=("Chromium")
  fi
fi
python -c "import flashinfer_bench.data" 2>/dev/null || missing+=("flashinfer-bench")
# flash-linear-attention, installed alone in a folder (its interpreter tests put it on a subprocess's path only:
# tests/test_peers_fla_interpreted.py says why)
if [ -z "${KERNELCRAFT_FLA_PATH:-}" ] && [ -d .kernelcraft/fla-interpreted/fla ]; then
  KERNELCRAFT_FLA_PATH=$PWD/.kernelcraft/fla-interpreted
  export KERNELCRAFT_FLA_PATH
fi
[ -n "${KERNELCRAFT_FLA_PATH:-}" ] || python -c "import fla" 2>/dev/null || missing+=("flash-linear-attention")
if [ ${#missing[@]} -gt 0 ]; then
  list=$(printf '%s, ' "${missing[@]}")
  if [ "${KC_TEST_REQUIRE_ALL:-0}" = 1 ]; then
    echo "scripts/test.sh: missing ${list%, } (KC_TEST_REQUIRE_ALL=1: their tests must run)" >&2
    exit 1
  fi
  echo "scripts/test.sh: not installed here: ${list%, }; their tests will be skipped (see the head of this script)" >&2
fi
ruff check .
# Two workers (pytest-xdist), one test file each at a time (--dist loadfile keeps a file's module fixtures
# in one process): the suite is mostly one-core work (a judge and its runner take turns), so on the
# 2-core CI machine this halves its wall time. The longest files start first (tests/conftest.py LONGEST_FIRST;
# --no-loadscope-reorder keeps that order). KC_TEST_WORKERS=0 runs it in this process.
python -m pytest -q -n "${KC_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=25 "$@"
