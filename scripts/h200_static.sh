#!/usr/bin/env bash
# One device call (issue 20, static gate): the static tests with the device's real toolchain (torch
# built with CUDA, so no stubbed c10 header; nvcc and the host compiler the builds use), then the
# zero-false-rejection sweep twice, cold and warm macro-dump cache, for its timing line.
# Expected: every test passes; "static gate: N honest solutions in X s" printed twice.
# Usage (device machine, repo root): bash scripts/h200_static.sh
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export KERNELCRAFT_CACHE=/tmp/kc_static_cache
rm -rf "$KERNELCRAFT_CACHE"
timeout 500 python3 -m pytest -q -s -p no:cacheprovider tests/test_static.py 2>&1 | tee "$OUT/static.log"
# conftest points each session at a fresh cache; the second sweep reuses the first one's dumps
timeout 200 python3 - <<'PY' 2>&1 | tee -a "$OUT/static.log"
import sys, time, tomllib
from pathlib import Path
from kernelcraft.gauntlet.static import check_static
from kernelcraft.solution import load_solution
from kernelcraft.task import load_task
for attempt in ("cold", "warm"):
    t0, n, bad = time.monotonic(), 0, []
    for d in sorted(Path("tasks").iterdir()):
        task = load_task(d)
        for p in task.solution_paths():
            n += 1
            v = check_static(load_solution(p, task.definition.name))
            if not v.passed:
                bad.append((str(p), v.reason))
    print(f"catalog sweep ({attempt}): {n} solutions in {time.monotonic() - t0:.1f} s, rejected: {bad}")
PY
