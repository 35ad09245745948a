#!/usr/bin/env bash
# The adversarial fixtures judged on cuda with the static gate off, as tests/test_adversarial.py judges them on CPU,
# each verdict printed beside expected.toml's CPU one (a graph replay runs none of a candidate's Python, so the
# eager-only cheats behave honestly there: results/h100/README.md "Session 32").
#   bash scripts/adversarial_gpu.sh LIMIT_S NAME...   (fixture names; triton_rowwise runs beside as the honest row)
#   -> $OUT/adversarial_gpu.{json,log,txt}
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
limit=$1; shift
A=tests/fixtures/adversarial
files=(); for n in "$@"; do files+=("$A/$n.py"); done
KERNELCRAFT_TEST_NO_STATIC_GATE=1 timeout "$limit" python3 -m kernelcraft eval tasks/rmsnorm \
  tasks/rmsnorm/solutions/triton_rowwise.py "${files[@]}" \
  --device cuda --budget-ms 20 --no-peers --json "$OUT/adversarial_gpu.json" > "$OUT/adversarial_gpu.log" 2>&1
echo "rc $?"
python3 - "$OUT/adversarial_gpu.json" <<'PY' 2>&1 | tee "$OUT/adversarial_gpu.txt"
import json, sys, tomllib
exp = tomllib.load(open("tests/fixtures/adversarial/expected.toml", "rb"))
for s in json.load(open(sys.argv[1]))["solutions"]:
    e = exp.get(s["name"], {})
    print(s["name"], s["status"], "(CPU batch expects", e.get("status", "-") + ")", (s.get("reason") or "")[:200])
PY
