#!/usr/bin/env bash
# One device call: the tuner on a catalog task on the H200, its run summary and ledger kept.
# Usage (device machine, repo root): bash scripts/h200_tuner.sh [task] [budget]
# Needs in .whl/ (cp312 wheels, see AGENTS.md): pydantic, pydantic_core, annotated_types,
# typing_inspection and sqlalchemy; the device image has none of them.
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
OUT=${OUT:-/tmp/out}
t=${1:-rmsnorm}
budget=${2:-8}
mkdir -p "$OUT" results/h200
timeout ${TUNER_TIMEOUT:-560} python3 -m kernelcraft optimize "tasks/$t" --agent tuner --device cuda --budget "$budget" --budget-ms "${BUDGET_MS:-100}" \
  --db "sqlite:///$OUT/ledger.db" --json "results/h200/optimize_${t}_tuner.json" 2>&1 | tee "$OUT/optimize_$t.log"
cp "results/h200/optimize_${t}_tuner.json" "$OUT/" 2>/dev/null
python3 -m kernelcraft ledger show --db "sqlite:///$OUT/ledger.db" --json > "$OUT/ledger_${t}.json"

# at most 8 files come back from $OUT: one archive
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
