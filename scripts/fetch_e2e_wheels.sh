#!/usr/bin/env bash
# On a machine with PyPI access (the developer machine): fetch, for the H200 machine (CPython 3.12,
# x86_64 manylinux, no network), the wheels `kernelcraft e2e` needs there: transformers and every
# dependency of it, into .whl/e2e/ (git-ignored; ~44 MB, ~16 MB of it numpy). scripts/h200_e2e.sh
# installs only those whose import fails on the device.
# Usage: bash scripts/fetch_e2e_wheels.sh     then carry .whl (with the base wheels AGENTS.md lists)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl/e2e
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl/e2e "transformers==5.24.0"
ls .whl/e2e
du -sh .whl .whl/e2e
