#!/usr/bin/env bash
# Assemble the FlashInfer-Trace dataset the issue-27 runs use, from a git clone (or bare mirror) of
# github.com/flashinfer-ai/flashinfer-bench, into DEST (git-ignored when under .datasets/; never commit it):
# - definitions/ and workloads/: flashinfer_trace/ as vendored at ecafa9c2, the last commit before
#   "Remove migrated flashinfer_trace dataset (#418)" (156 definitions, 26 with workloads; no blob/);
# - solutions/: the 41 CUDA solutions of FlashInfer-Bench's own gpt-5.2 run at 4def975f
#   (bench/test/results/fib_all_defs_20260317_141743/gpt-5.2/solutions), 26 of them for definitions
#   with workloads.
# Usage: bash scripts/fib_dataset.sh /work/.mirror/flashinfer-ai+flashinfer-bench/repo .datasets/fib
set -euo pipefail
SRC=${1:?git dir of a flashinfer-bench clone}
DEST=${2:?destination folder}
DEFS=ecafa9c2
SOLS=4def975f
SOLPATH=bench/test/results/fib_all_defs_20260317_141743/gpt-5.2/solutions/gpt-5.2
rm -rf "$DEST" && mkdir -p "$DEST/solutions"
git --git-dir "$SRC" archive "$DEFS" flashinfer_trace/definitions flashinfer_trace/workloads \
  | tar x -C "$DEST" --strip-components=1
git --git-dir "$SRC" archive "$SOLS" "$SOLPATH" | tar x -C "$DEST/solutions" --strip-components=6
echo "$DEST: $(find "$DEST/definitions" -name '*.json' | wc -l) definitions, $(find "$DEST/workloads" -name '*.jsonl' | wc -l) workload files, $(find "$DEST/solutions" -name '*.json' | wc -l) solutions"
