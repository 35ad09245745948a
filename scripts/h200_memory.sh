#!/usr/bin/env bash
# One device call (optional, ~3 min): the ledger's memory on the H200. The tuner runs on
# tasks/rmsnorm, then on a second rmsnorm task (hidden 2048, no solutions of its own) in the same
# ledger; the second run must start from the first run's best candidate (its first candidate's
# parent) and say so in its plan. Also prints what `ledger similar` and the knowledge search return
# there (torch's device name, not the CPU's, selects the Hopper pages).
# Usage (device machine, repo root): bash scripts/h200_memory.sh [budget]
set -u
export PYTHONUNBUFFERED=1
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
OUT=${OUT:-/tmp/out}
budget=${1:-3}
mkdir -p "$OUT"
db="sqlite:///$OUT/ledger.db"
python3 - "$OUT/rmsnorm_bf16_h2048" <<'PY'
import json, shutil, sys, uuid
from pathlib import Path
out = Path(sys.argv[1]); shutil.copytree("tasks/rmsnorm", out); shutil.rmtree(out / "solutions")
d = json.loads((out / "definition.json").read_text()); d["name"] = "rmsnorm_bf16_h2048"
d["axes"]["hidden_size"]["value"] = 2048
d["constraints"] = ["hidden_size == 2048" if "hidden_size" in c else c for c in d["constraints"]]
(out / "definition.json").write_text(json.dumps(d, indent=2))
lines = []
for line in (Path("tasks/rmsnorm") / "workloads.jsonl").read_text().splitlines():
    rec = json.loads(line); rec["definition"] = d["name"]; rec["workload"]["uuid"] = str(uuid.uuid4()); lines.append(json.dumps(rec))
(out / "workloads.jsonl").write_text("\n".join(lines) + "\n")
PY
timeout 250 python3 -m kernelcraft optimize tasks/rmsnorm --agent tuner --device cuda --budget "$budget" --budget-ms 50 \
  --db "$db" --json "$OUT/first.json" 2>&1 | tee "$OUT/first.log"
timeout 250 python3 -m kernelcraft optimize "$OUT/rmsnorm_bf16_h2048" --agent tuner --device cuda --budget "$budget" \
  --budget-ms 50 --db "$db" --json "$OUT/second.json" 2>&1 | tee "$OUT/second.log"
python3 - "$OUT" <<'PY'
import json, sqlite3, sys
out = sys.argv[1]
first, second = (json.load(open(f"{out}/{n}.json")) for n in ("first", "second"))
best = max((c for c in first["candidates"] if c["agent"] != "baseline" and c["speedup_vs_baseline"]),
           key=lambda c: c["speedup_vs_baseline"])
start = second["candidates"][1]
plan = sqlite3.connect(f"{out}/ledger.db").execute("SELECT plan FROM candidates WHERE id = ?", (start["id"],)).fetchone()[0]
print(json.dumps({"first_best": best, "second_first": start, "plan": plan,
                  "starts_from_first_best": start["parent"] == best["id"]}, indent=2))
PY
python3 -m kernelcraft ledger similar "$OUT/rmsnorm_bf16_h2048" --db "$db" --device "$(python3 -c 'import torch; print(torch.cuda.get_device_name())')"
python3 -m kernelcraft knowledge search "rmsnorm rows per program" --op-type rmsnorm --device "$(python3 -c 'import torch; print(torch.cuda.get_device_name())')" --limit 3

[ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
