#!/usr/bin/env bash
# One device call: the public KDA wishlist requests (NVlabs/kda) evaluated as their authors judge them
# (issue 22), one record per request folder under results/h200/requests/:
#   kernelcraft eval WORK/<folder> <our candidate> --with-baseline --device cuda --no-peers --json ...
# WORK/<folder> is a copy of REQUESTS_DIR/<folder> plus the contract lines a user adds
# (scripts/requests/<folder>.toml: the README's tolerances, the benchmark.py generator, input sets and
# judge) and, where the request has a benchmark.py, its [validate] gate (scripts/requests/validate.toml,
# through kc_validate_on_this_gpu.py: benchmark.py asserts a B200/B300). `kernelcraft task check` of the
# untouched folder (what a new user sees) is kept beside each record.
#
# Usage (device machine, repo root): bash scripts/h200_requests.sh REQUESTS_DIR
#   REQUESTS_DIR holds the request folders as fetched (never committed): example, conless-leapquant-*,
#   jasvixban-fft3d-* (carry them: e.g. copy them to .kernelcraft/requests/, an ignored path, and run
#   `bash scripts/h200_requests.sh .kernelcraft/requests` with carry [".kernelcraft/requests"]).
# DEVICE=cpu runs the same here: the Triton interpreter, checks only (--no-timing: interpreted timings
# take minutes and mean nothing), workloads up to 32 MB, no [validate] (the benchmarks need CUDA).
# ONLY="folder ..." runs those alone; CAND_FILES="a.py b.py" judges those files instead of each folder's CAND entry. Limits: EVAL_S per request (default 75 s), TOTAL_S in all
# (default 345 s, under 6 minutes); a request that cannot start with 30 s left is named at the end.
set -u
export PYTHONUNBUFFERED=1
start=$(date +%s)
REQ=${1:?usage: bash scripts/h200_requests.sh REQUESTS_DIR}
DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" = cuda ]; then
  source scripts/device_wheels.sh
  export KERNELCRAFT_CACHE=/tmp/kc_cache
  RES=${RES:-results/h200/requests}
else
  export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
  RES=${RES:-/tmp/kc_requests_cpu}
fi
OUT=${OUT:-/tmp/out}
EVAL_S=${EVAL_S:-75}
TOTAL_S=${TOTAL_S:-345}
mkdir -p "$OUT" "$RES"
[ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/nvidia-smi.txt"

C=tests/fixtures/kda_request_candidates
F=tests/fixtures/kda_fft_solutions
declare -A CAND=(
  [conless-leapquant-gdn-step]=$C/gdn_step_split.py
  [conless-leapquant-kda-step]=$C/kda_step_triton.py
  [conless-leapquant-gdn-flush]=$C/gdn_flush_triton.py
  [conless-leapquant-kda-flush]=$C/kda_flush_triton.py
  [example]=$C/rmsnorm_triton.py
  [jasvixban-fft3d-r2c]=$F/dft_r2c_triton.py
  [jasvixban-fft3d-c2r]=$F/dft_c2r_triton.py
  [jasvixban-fft3d-r2c-f64]=$F/dft_r2c_triton.py
  [jasvixban-fft3d-c2r-f64]=$F/dft_c2r_triton.py
)
ORDER=(conless-leapquant-gdn-step conless-leapquant-kda-step conless-leapquant-gdn-flush conless-leapquant-kda-flush
       example jasvixban-fft3d-r2c jasvixban-fft3d-c2r jasvixban-fft3d-r2c-f64 jasvixban-fft3d-c2r-f64)
[ -n "${ONLY:-}" ] && read -r -a ORDER <<< "$ONLY"

work=$(mktemp -d /tmp/kc_requests.XXXXXX)
skipped=()
for f in "${ORDER[@]}"; do
  if [ ! -d "$REQ/$f" ]; then echo "=== $f: not in $REQ"; skipped+=("$f"); continue; fi
  left=$(( TOTAL_S - ($(date +%s) - start) ))
  if [ "$left" -lt 30 ]; then skipped+=("$f"); continue; fi
  limit=$(( left < EVAL_S ? left : EVAL_S ))
  python3 -m kernelcraft task check "$REQ/$f" > "$RES/$f.task_check.txt" 2>&1
  cp -r "$REQ/$f" "$work/$f"
  cp "scripts/requests/$f.toml" "$work/$f/contract.toml"
  extra=(--budget-ms "${BUDGET_MS:-30}" --no-calibrate)
  if [ "$DEVICE" = cuda ]; then
    extra+=(--no-peers)
    if [ -f "$work/$f/benchmark.py" ]; then
      cp scripts/requests/kc_validate_on_this_gpu.py "$work/$f/"
      cat scripts/requests/validate.toml >> "$work/$f/contract.toml"
    fi
  else
    extra+=(--no-timing --cpu-max-mb 32)
  fi
  echo "=== $f (limit ${limit} s, $(( $(date +%s) - start )) s elapsed): ${CAND_FILES:-${CAND[$f]}}"
  cands=${CAND_FILES:-${CAND[$f]}}
  # shellcheck disable=SC2086  # CAND_FILES is a space-separated list of files
  timeout "$limit" python3 -m kernelcraft eval "$work/$f" $cands --with-baseline --device "$DEVICE" \
    "${extra[@]}" --json "$RES/$f.json" > "$RES/$f.log" 2>&1
  echo "    exit $?"
  cp "$work/$f/contract.toml" "$RES/$f.contract.toml"
done
rm -rf "$work"

# one line per record: the baseline's verdict and the candidate's, with the request's own judge and verifier
python3 - "$RES" <<'EOF' | tee "$RES/summary.txt"
import json, sys
from pathlib import Path
for p in sorted(Path(sys.argv[1]).glob("*.json")):
    rep = json.loads(p.read_text())
    for s in rep["solutions"]:
        ratios = [w["request_judge_ratio"] for w in s["workloads"] if w.get("request_judge_ratio") is not None]
        ran = sum(w["status"] == "PASSED" for w in s["workloads"])
        judge = f"judge<={max(ratios):.3g}" if ratios else "judge -"
        v = (s.get("validation") or {}).get("status", "-")
        ref = s.get("speedup_vs_reference")
        note = s["reason"].splitlines()[0][:150] if s["reason"] else ""
        print(f"{p.stem:28} {s['name']:18} {s['status']:20} {ran}/{len(s['workloads'])} workloads {judge:14} "
              f"validate {v:9} x_ref {ref if ref is None else round(ref, 3)} x_base {s.get('speedup_vs_baseline')} {note}")
EOF
echo "=== done in $(( $(date +%s) - start )) s${skipped:+; not run: ${skipped[*]}}"
cp "$RES"/* "$OUT/" 2>/dev/null
[ "$DEVICE" != cuda ] || [ "${KC_NO_PACK:-0}" = 1 ] || bash scripts/pack_out.sh
