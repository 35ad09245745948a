#!/usr/bin/env bash
# The session's last call on a 2-GPU H200 machine:
#   1. tune softmax's dispatch candidate (optimize --agent tuner:FILE, TUNE_BUDGET configurations,
#      ledger $OUT/ledger_final.db) and write the promoted configuration to
#      tasks/softmax/candidates/triton_dispatch_tuned.py (copied to $OUT)
#   2. the records: scripts/h200x2_records.sh with RECORDS (task:file,file ...), STEPS=scale with
#      benchmarks/scale.py --candidates 48
# Usage: bash scripts/h200x2_final.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
start=$(date +%s)
timeout 90 python3 -m kernelcraft optimize tasks/softmax --agent tuner:tasks/softmax/candidates/triton_dispatch.py --device cuda \
  --budget "${TUNE_BUDGET:-6}" --budget-ms 100 --db "sqlite:///$OUT/ledger_final.db" --json "$OUT/optimize_softmax_tuner.json" 2>&1 \
  | grep -v Warning | tail -14 | tee "$OUT/tune_softmax.log"
python3 - "$OUT" <<'PY'
import json, sqlite3, sys
from pathlib import Path
out = Path(sys.argv[1])
try:
    run = json.loads((out / "optimize_softmax_tuner.json").read_text())
    row = sqlite3.connect(out / "ledger_final.db").execute("select solution, agent from candidates where id=?", (run["promoted"],)).fetchone()
    sol = json.loads(row[0])
    assert row[1] == "tuner", "the promoted candidate is not a tuned one"
    entry = next(s for s in sol["sources"] if s["path"] == sol["spec"]["entry_point"].split("::")[0])
    dest = Path("tasks/softmax/candidates/triton_dispatch_tuned.py")
    dest.write_text(entry["content"])
    (out / "triton_dispatch_tuned.py").write_text(entry["content"])
    print("softmax: promoted", sol["name"], "->", dest)
except Exception as e:  # noqa: BLE001
    print("softmax: no tuned file:", e)
PY
sm="softmax:solutions/triton_online.py"
[ -f tasks/softmax/candidates/triton_dispatch_tuned.py ] && sm="softmax:candidates/triton_dispatch_tuned.py,solutions/triton_online.py"
left=$(( ${DEADLINE:-560} - ($(date +%s) - start) ))
DEADLINE=$left RESERVE=${RESERVE:-185} STEPS=scale SCALE_ARGS="--candidates 48" KC_NO_PACK=1 bash scripts/h200x2_records.sh \
  "$sm" \
  layernorm:solutions/triton_dispatch.py,candidates/triton_rowwise.py \
  fp8_rowwise_quant:solutions/triton_hwcvt.py,candidates/triton_rowwise.py \
  topk:candidates/triton_groupmax_filter.py \
  kmeans_assign:solutions/triton_bf16x3.py \
  balanced_kmeans_step:solutions/triton_rounds.py,candidates/triton_open_bf16x3.py,candidates/triton_open_nosync.py
[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
