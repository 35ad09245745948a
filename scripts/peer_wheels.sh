# Sourced on the device machine from the repository root: bring in the peer wheels (issue 21),
# which travel in two calls because nvidia-cutlass-dsl-libs-cu13 alone is 92 MB (the working tree
# of one call travels in at most 64 MiB). The wheels live in .whl-peers/ (git-ignored; its
# layout and sizes are in scripts/peer_wheels.txt):
#
#   call 1, carry [".whl-peers/parts/<libs-cu13>.part-00"]:
#       source scripts/peer_wheels.sh stash
#   call 2, within the machine's warm window (30 s after call 1 returns), carry
#   [".whl-peers/parts/<libs-cu13>.part-01", ".whl-peers/parts/<libs-cu13>.sha256", ".whl-peers/small"]:
#       source scripts/peer_wheels.sh install && python3 scripts/h200_peers_check.py --peers torch,liger,quack,fla
#   later calls on the same warm machine (FlashInfer's nvcc JIT of four modules is the slow part):
#       source scripts/peer_wheels.sh env && python3 scripts/h200_peers_check.py --peers flashinfer
#   one call, carry [".whl-peers/c1"] (or small/): PEER_WHEELS=.whl-peers/c1 source scripts/peer_wheels.sh small
#   Source this after scripts/device_wheels.sh, which sets PYTHONPATH without the cutlass folder.
#
# `install` joins the parts kept in $PEER_STASH, checks the sha256 of every part and of the joined
# wheel, installs everything into /tmp/site (no index, no dependencies: the image has the rest)
# and sets PYTHONPATH. nvidia-cutlass-dsl puts its `cutlass` package on sys.path through a .pth
# file, which pip --target leaves unprocessed, so its dsl_packages folder goes on PYTHONPATH too.
PEER_STASH=${PEER_STASH:-/tmp/whl-peers-stash}
PEER_SITE=${PEER_SITE:-/tmp/site}

_peer_env() {
    export PYTHONPATH=$PEER_SITE:$PEER_SITE/nvidia_cutlass_dsl/dsl_packages:$PWD/src
    # FlashInfer JIT-builds with nvcc on a peer's first call: CUDA_HOME, curand.h, libcuda.so
    eval "$(python3 scripts/peer_jit_env.py)"
}

case "${1:-}" in
  stash)
    mkdir -p "$PEER_STASH" && cp -v .whl-peers/parts/* "$PEER_STASH"/ || return 1
    ;;
  install)
    mkdir -p "$PEER_STASH" && cp .whl-peers/parts/* "$PEER_STASH"/ || return 1
    for sums in "$PEER_STASH"/*.sha256; do
        whl=$(basename "$sums" .sha256)
        if [ ! -f "$PEER_STASH/$whl" ]; then
            (cd "$PEER_STASH" && cat "$whl".part-* > "$whl") || return 1
        fi
        (cd "$PEER_STASH" && sha256sum -c "$(basename "$sums")") || { echo "peer wheel $whl: checksum mismatch (a part missing?)"; return 1; }
    done
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$PEER_SITE" \
        "${PEER_WHEELS:-.whl-peers/small}"/*.whl "$PEER_STASH"/*.whl || return 1
    _peer_env
    ;;
  small)  # the peers that need no cutlass-cu13 parts (FLA, Liger, ...): one folder, one call
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$PEER_SITE" \
        "${PEER_WHEELS:-.whl-peers/small}"/*.whl || return 1
    _peer_env
    ;;
  env)
    _peer_env
    ;;
  *)
    echo "usage: source scripts/peer_wheels.sh stash|install|small|env" >&2
    return 1
    ;;
esac
