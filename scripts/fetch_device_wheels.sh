#!/usr/bin/env bash
# Rebuild every git-ignored folder the device calls carry, in a fresh checkout (a new session's checkout has none of
# them). All cp312 manylinux x86_64 wheels for the device machine (Python 3.12, no index there):
#   .whl/                    the records' and the runner's own dependencies the device image lacks (pydantic,
#                            SQLAlchemy, alembic, landlock ...): scripts/device_wheels.sh installs them
#   .whl-peers/c1/           flash-linear-attention + fla-core, Liger-Kernel (pure Python Triton peers)
#   .whl-peers/c3/           FlashInfer and tvm-ffi (scripts/catalog_wheels.sh)
#   .whl-peers/c3q/          quack and the small CuTe DSL wheels (scripts/h200_s32_stash.sh)
#   .whl-peers/big/          nvidia-cutlass-dsl-libs-cu13 (92 MB), repacked as .whl-peers/cutlass-xz/ (52 MB)
#   .whl-diag/               py-spy (scripts/dump_stacks.sh)
#   .kernelcraft/flashinfer-cache/  FlashInfer's JIT modules prebuilt for sm_90a (scripts/flashinfer_prebuild.sh)
# Versions are those of scripts/peer_wheels.txt and AGENTS.md's Machines section. Needs torch installed here (the
# prebuild reads its ABI flag). Steps that are done already are skipped; FORCE=1 redoes them.
#   bash scripts/fetch_device_wheels.sh          (~1 min of downloads, ~3.5 min xz, ~4.5 min prebuild on 2 cores)
set -eu
cd "$(dirname "$0")/.."
grep -qx '/.whl-peers/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; printf '/.whl-peers/\n/.whl-diag/\n' >> .git/info/exclude; }
DL="python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
fetch() {  # DIR PACKAGE...
  local d=$1; shift
  if [ "${FORCE:-0}" != 1 ] && [ -n "$(ls "$d"/*.whl 2>/dev/null)" ]; then echo "$d: present"; return; fi
  mkdir -p "$d" && $DL -d "$d" "$@" && echo "$d: $(ls "$d" | wc -l) wheels, $(du -sh "$d" | cut -f1)"
}
fetch .whl pydantic==2.13.4 pydantic_core==2.46.4 annotated-types==0.7.0 typing-inspection==0.4.2 \
  sqlalchemy==2.1.9 alembic==1.20.1 mako==1.4.3 markupsafe landlock==1.0.0.dev5
fetch .whl-peers/c1 fla-core==0.6.0 flash-linear-attention==0.6.0 liger-kernel==0.8.5
fetch .whl-peers/c3 flashinfer-python==0.6.13 apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5
fetch .whl-peers/c3q quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
  nvidia-cutlass-dsl-libs-core==4.8.1
fetch .whl-peers/big nvidia-cutlass-dsl-libs-cu13==4.8.1
fetch .whl-diag py-spy==0.4.3
big=$(ls .whl-peers/big/nvidia_cutlass_dsl_libs_cu13-*.whl)
want=$(awk '$1 ~ /^big\// {print $3}' scripts/peer_wheels.txt)
got=$(sha256sum "$big" | cut -d' ' -f1)
[ "$got" = "$want" ] && echo "cutlass-cu13 wheel sha256 matches scripts/peer_wheels.txt" \
  || { echo "cutlass-cu13 wheel sha256 $got, scripts/peer_wheels.txt says $want"; exit 1; }
if [ "${FORCE:-0}" = 1 ] || [ -z "$(ls .whl-peers/cutlass-xz/*.tar.xz 2>/dev/null)" ]; then
  bash scripts/pack_cutlass_xz.sh "$big"
else echo ".whl-peers/cutlass-xz: present"; fi
if [ "${FORCE:-0}" = 1 ] || [ ! -d .kernelcraft/flashinfer-cache/flashinfer_jit_cache ]; then
  WHEEL=$PWD/$(ls .whl-peers/c3/flashinfer_python-*.whl) bash scripts/flashinfer_prebuild.sh
else echo ".kernelcraft/flashinfer-cache: present"; fi
du -sh .whl .whl-peers/* .whl-diag .kernelcraft/flashinfer-cache
