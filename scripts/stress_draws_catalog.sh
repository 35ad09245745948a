#!/usr/bin/env bash
# Every catalog task's honest solutions over fresh stress draws at CI's small shapes (tests/conftest.py's
# SMALL_AXES, tests/test_catalog2.py's SMALL), judged by the judge's own check on CPU (Triton interpreter):
# benchmarks/stress_false_rejections.py, one record per task under results/cpu/stress_draws/.
#   DRAWS=20 bash scripts/stress_draws_catalog.sh [task ...]
set -u
export TRITON_INTERPRET=1 PYTHONPATH=$PWD/src
DRAWS=${DRAWS:-20}
OUTDIR=${OUTDIR:-results/cpu/stress_draws}
mkdir -p "$OUTDIR"
declare -A AXES=(
  [rmsnorm]='{"batch_size": 3}'
  [silu_mul]='{"num_tokens": 2}'
  [softmax]='{"num_rows": 3, "width": 4099}'
  [fused_add_rmsnorm]='{"num_tokens": 2, "hidden_size": 5120}'
  [layernorm]='{"num_tokens": 2, "hidden_size": 4544}'
  [gelu_tanh_mul]='{"num_tokens": 2, "two_i": 6000, "intermediate_size": 3000}'
  [rope]='{"num_tokens": 2}'
  [fp8_rowwise_quant]='{"num_tokens": 2, "hidden_size": 4096}'
  [cross_entropy]='{"num_rows": 3, "vocab_size": 5000}'
  [topk]='{"num_rows": 3, "vocab_size": 200, "k": 8}'
  [kmeans_assign]='{"num_points": 300, "dim": 33, "num_centroids": 70}'
  [balanced_kmeans_step]='{"num_points": 500, "dim": 16, "num_centroids": 40}'
  [gdn_decode]='{"batch_size": 3}'
)
rc=0
for t in ${@:-${!AXES[@]}}; do
  python benchmarks/stress_false_rejections.py "tasks/$t" --axes "${AXES[$t]}" --draws "$DRAWS" \
    --out "$OUTDIR/$t.json" || rc=1
done
exit $rc
