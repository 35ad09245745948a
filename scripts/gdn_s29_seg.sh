#!/usr/bin/env bash
# Session 29 (<= 560 s, any one-GPU kind). carry: [".whl", ".whl-peers/c1"]   command: DEADLINE=550 bash scripts/gdn_s29_seg.sh
# gdn_prefill: where chunk8 (promoted in session 28, 1.173x FLA on an H100 under kc-timing/8) is at par or behind
# FLA, the sequence-parallel path runs (4 x 1024 1.01x, 8 x 512 0.93x, 3 seqs 1.03x, 16 seqs 1.11x). Its CONFIG
# decides which sequences take it (segmented when N <= SEG_MAX_N = 16) and its widths; session 26 measured the
# serial split path 137 against the segmented 143 us at 8 x 512 (SEG_MAX_N 4). These variants of chunk8 are split
# beside it and FLA on all nine workloads, the best judged beside chunk8 (scripts/gdn_variants_judge.sh), at
# --budget-ms 200 (kc-timing/8: every row converged in session 28 at that budget).
export GDN_BUDGET=${GDN_BUDGET:-200}
CMP=tasks/gdn_prefill/solutions/triton_chunk8.py BASE=tasks/gdn_prefill/solutions/triton_chunk8.py VDIR=c8seg \
VARIANTS='{"SEG_MAX_N": 4}
{"SEG_MAX_N": 8}
{"PAR_BV": 32}
{"SEG_TOTAL": 16}' exec bash scripts/gdn_variants_judge.sh
