#!/usr/bin/env bash
# Split a wheel too large for one device call (the call's working tree travels in at most 64 MiB)
# into parts of at most PART_BYTES (default 60,000,000), and write NAME.sha256 with the sha256 of
# the whole wheel and of every part, so the device side can join them and prove the join.
#
#   scripts/split_wheel.sh WHEEL OUTDIR [PART_BYTES]
#   -> OUTDIR/WHEEL_NAME.part-00, .part-01, ...  and  OUTDIR/WHEEL_NAME.sha256
#
# Join (scripts/peer_wheels.sh does it): cat NAME.part-* > NAME && sha256sum -c NAME.sha256
set -euo pipefail
wheel=${1:?usage: split_wheel.sh WHEEL OUTDIR [PART_BYTES]}
outdir=${2:?usage: split_wheel.sh WHEEL OUTDIR [PART_BYTES]}
part_bytes=${3:-60000000}
name=$(basename "$wheel")
mkdir -p "$outdir"
rm -f "$outdir/$name".part-* "$outdir/$name.sha256"
split -b "$part_bytes" -d -a 2 "$wheel" "$outdir/$name.part-"
(cd "$(dirname "$wheel")" && sha256sum "$name") > "$outdir/$name.sha256"
(cd "$outdir" && sha256sum "$name".part-*) >> "$outdir/$name.sha256"
ls -l "$outdir/$name".part-* | awk '{print $5, $9}'
