#!/usr/bin/env bash
# Session 27 (<= 560 s, any one-GPU kind; called by scripts/h200_s27_call1.sh or alone).
# carry: [".whl", ".whl-peers/c1"]       command: DEADLINE=550 bash scripts/gdn_s27_wu.sh
# gdn_prefill's preparation: triton_chunk7.py (chunk6 with `_wu`'s products in bf16, one program per chunk-head;
# candidates/ when session 27 ran this, solutions/ since) and its WU_* variants, split beside chunk6 and FLA, the best
# form judged beside chunk6 (scripts/gdn_variants_judge.sh).
CMP=tasks/gdn_prefill/solutions/triton_chunk6.py BASE=tasks/gdn_prefill/solutions/triton_chunk7.py VDIR=c7v \
VARIANTS='{"WU_BK": 64}
{"WU_BK": 64, "WU_WARPS": 8}
{"WU_WARPS": 8}
{"WU_BF16": false}' exec bash scripts/gdn_variants_judge.sh
