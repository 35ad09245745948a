#!/usr/bin/env bash
# Session 27 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]   command: DEADLINE=550 bash scripts/gdn_s27_tb.sh
# gdn_prefill: triton_chunk8.py (chunk7 with T diag(beta) stored in bf16, the scores in `_kkt`'s odd programs;
# promoted to solutions/ in session 28) and its variants, split beside the promoted chunk7 and FLA, the best form judged beside chunk7
# (scripts/gdn_variants_judge.sh). SKIP_SPLIT=1: the eval of chunk7 and chunk8 alone (~210 s on an H100; session 27's
# split + eval needed more than 395 s). Session 27 ran the variants {"KKT_S_ODD": true} and {"TB_BF16": false,
# "KKT_S_ODD": true} on chunk8 with KKT_S_ODD false; its CONFIG has KKT_S_ODD true since (that run's best form).
CMP=tasks/gdn_prefill/solutions/triton_chunk7.py BASE=tasks/gdn_prefill/solutions/triton_chunk8.py VDIR=c8v \
VARIANTS='{"KKT_S_ODD": false}
{"TB_BF16": false}' exec bash scripts/gdn_variants_judge.sh
