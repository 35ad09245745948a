#!/usr/bin/env bash
# The device tool brings back at most 8 files from $OUT (device/README.md, Limits): pack everything
# there into one archive, $OUT/out.tgz (unpack here with `tar xzf /work/.device/N/out.tgz`).
# Called at the end of every device script that writes more than a few files.
set -u
OUT=${OUT:-/tmp/out}
[ -d "$OUT" ] || exit 0
tmp=$(mktemp /tmp/out.XXXXXX.tgz)
tar czf "$tmp" -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv "$tmp" "$OUT/out.tgz"
ls -la "$OUT"
