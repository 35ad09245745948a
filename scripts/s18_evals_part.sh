#!/usr/bin/env bash
# Part of scripts/h200_s18_call{2,3}.sh (device side; PYTHONPATH and the peers already set): `kernelcraft eval` of each
# task in TASKS with static torch.compile and every peer of its peers/ folder, the promoted solution(s) beside the
# sweep's two best variants (scripts/sweep_pick.py over /tmp/sweep, when the sweep ran for the task). A run with one
# candidate is confirmed with Nsight Compute (promotable); a run with picks is --no-confirm (device time). Records to
# $OUT/catalog/<task>.json, logs beside them, the picked files in $OUT/picked/<task>/.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/catalog" "$OUT/picked"
start=$(date +%s)
left() { echo $(( ${DEADLINE:-550} - ($(date +%s) - start) )); }
declare -A SOLS=([softmax]="triton_online.py" [silu_mul]="triton_tiled.py" [gelu_tanh_mul]="triton_tiled.py"
  [fused_add_rmsnorm]="triton_rowwise.py" [layernorm]="triton_dispatch.py" [rmsnorm]="triton_rowwise.py triton_dps"
  [rope]="triton_tokens.py" [topk]="triton_radix_mc.py" [cross_entropy]="triton_online.py")
clean() { grep -v "leaked\|nanobind\|skipped rem\|refleaks\|Warning"; }
for t in ${TASKS:?}; do
  l=$(left); [ "$l" -lt 45 ] && { echo "=== no time for $t ($l s left)"; continue; }
  files=(); for s in ${SOLS[$t]}; do files+=("tasks/$t/solutions/$s"); done
  picks=()
  if [ -f /tmp/sweep/sweep_$t.json ]; then
    mkdir -p "$OUT/picked/$t"
    python3 scripts/sweep_pick.py /tmp/sweep/sweep_$t.json /tmp/sweep/variants/$t -n ${PICKS:-2} > "$OUT/picked/$t/why.txt"
    while read -r f; do case "$f" in "#"*|"") ;; *) cp "$f" "$OUT/picked/$t/"; picks+=("$f");; esac; done < "$OUT/picked/$t/why.txt"
  fi
  confirm=--confirm; [ ${#picks[@]} -gt 0 ] && confirm=--no-confirm
  echo "=== $t ($l s left): ${files[*]} ${picks[*]} $confirm"
  t0=$(date +%s)
  timeout $(( l - 5 )) python3 -m kernelcraft eval tasks/$t "${files[@]}" "${picks[@]}" --with-baseline --device cuda \
    --peers --budget-ms ${BUDGET_MS:-100} $confirm --json "$OUT/catalog/$t.json" > "$OUT/catalog/$t.log" 2>&1
  echo "rc $? $(( $(date +%s) - t0 )) s"
  clean < "$OUT/catalog/$t.log" | grep -B2 -A16 "x best peer" | head -26 | cut -c1-250
done 2>&1 | tee -a "$OUT/catalog.txt"
