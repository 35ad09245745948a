#!/usr/bin/env bash
# Repack nvidia-cutlass-dsl-libs-cu13 (92 MB wheel, over a device call's 64 MiB carry) as one xz tarball of the
# wheel's unpacked contents with the x86 BCJ filter and a 192 MiB dictionary: 52.0 MB (plain xz -9e: 63.5 MB;
# session 32, 3.5 min on 2 cores), so it travels in one call (scripts/h200_s32_stash.sh) instead of three parts.
# The tarball unpacks to what `pip install --target` would write (the package folder and its .dist-info).
#   bash scripts/pack_cutlass_xz.sh [WHEEL]  -> .whl-peers/cutlass-xz/<name>.tar.xz and .sha256
set -eu
WHL=${1:-$(ls .whl-peers/big/nvidia_cutlass_dsl_libs_cu13-*.whl | head -1)}
name=$(basename "$WHL" | sed 's/-cp312.*//')
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
(cd "$D" && unzip -q "$OLDPWD/$WHL")
mkdir -p .whl-peers/cutlass-xz
tar -C "$D" -cf - . | xz --x86 --lzma2=preset=9e,dict=192MiB -T1 > ".whl-peers/cutlass-xz/$name.tar.xz"
(cd .whl-peers/cutlass-xz && sha256sum "$name.tar.xz" > "$name.tar.xz.sha256" && ls -la)
