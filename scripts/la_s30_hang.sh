#!/usr/bin/env bash
# Session 30, third call (<= 175 s, any one-GPU kind). carry: [".whl"]   command: bash scripts/la_s30_hang.sh
# la_s30.sh / la_s30b.sh's evals of gdn chunk10 and kda intra7 never left correctness (or chunk10's holdouts) in
# 141-265 s on an H100, where chunk8 / intra5 went on to timing; the sweep had run `_recur` at BV 4 / 8 / 16 fine.
# Is it `_recur` at BV 8 inside the eval? Each step is short and killed by its own timeout: the candidate run
# directly (la_short_sweep, no peers) at BV 4 and 8, then the eval of the 1-token workload alone (no peers, no
# timing, --timeout 25 s a phase) at BV 8 (the files as committed) and BV 4.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
start=$(date +%s)
source scripts/device_wheels.sh
export KERNELCRAFT_CACHE=/tmp/kc_cache
G=tasks/gdn_prefill/candidates/triton_chunk10.py K=tasks/kda_prefill/candidates/triton_intra7.py
mkdir -p /tmp/v
sed 's/"RECUR_BV": 0,/"RECUR_BV": 4,/' $G > /tmp/v/triton_chunk10_bv4.py
sed 's/"RECUR_BV": 0,/"RECUR_BV": 16,/' $K > /tmp/v/triton_intra7_bv16.py
grep -c '"RECUR_BV": 4,' /tmp/v/triton_chunk10_bv4.py; grep -c '"RECUR_BV": 16,' /tmp/v/triton_intra7_bv16.py
echo "=== direct ($(( $(date +%s) - start )) s)"
timeout 30 python3 scripts/la_short_sweep.py --task gdn_prefill --shapes 1x1,9x3 --no-peers --no-graph --rep 5 \
  --impl "bv4=$G:{\"RECUR_BV\": 4}" --impl "bv8=$G:{\"RECUR_BV\": 8}" 2>&1 | tail -6; echo "rc ${PIPESTATUS[0]}"
ev() {  # task uuid file tag
  echo "=== eval $4 ($(( $(date +%s) - start )) s)"
  timeout 40 python3 -m kernelcraft eval "tasks/$1" "$3" --workload "$2" --device cuda --no-peers --no-timing \
    --no-confirm --no-calibrate --timeout 20 --json "$OUT/$4.json" > "$OUT/$4.log" 2>&1
  echo "rc $?"; grep -v "Warning\|warn(" "$OUT/$4.log" | tail -12 | cut -c1-220
}
ev gdn_prefill 7f152d68 $G gdn_bv8
ev gdn_prefill 7f152d68 /tmp/v/triton_chunk10_bv4.py gdn_bv4
ev kda_prefill 5ab1502f $K kda_bv8
echo "=== done in $(( $(date +%s) - start )) s"
bash scripts/pack_out.sh
