#!/usr/bin/env bash
# Prebuild FlashInfer 0.6.13's JIT modules for sm_90a HERE (no GPU needed), so the flashinfer peers
# (tasks/*/peers/flashinfer.py) run on the H200 without nvcc minutes of device time.
#
# What: the five tvm-ffi modules those peers load, built with FlashInfer's own JitSpec (its ninja file,
#   its nvcc flags) for FLASHINFER_CUDA_ARCH_LIST=9.0 (FlashInfer normalises it to sm_90a), MAX_JOBS=2:
#     silu_and_mul       activation.silu_and_mul          (silu_mul)
#     gelu_tanh_and_mul  activation.gelu_tanh_and_mul     (gelu_tanh_mul)
#     rope               rope.apply_rope_with_cos_sin_cache (rope)
#     topk               topk.top_k                       (topk)
#     norm               norm.rmsnorm / fused_add_rmsnorm / layernorm, but only on the CUDA path:
#                        with nvidia-cutlass-dsl importable FlashInfer runs its CuTe DSL norms instead
#                        (no nvcc, no use of this module); FLASHINFER_USE_CUDA_NORM=1 forces this one.
# Where: OUT (default .kernelcraft/flashinfer-cache, git-ignored), laid out as a stand-in for FlashInfer's
#   own "flashinfer-jit-cache" package:  OUT/flashinfer_jit_cache/__init__.py (version 0.6.13+..., and
#   get_jit_cache_dir()) and OUT/flashinfer_jit_cache/jit_cache/<name>/<name>.so. With OUT on PYTHONPATH,
#   flashinfer.jit.env sets FLASHINFER_AOT_DIR to that folder at import, and JitSpec.build_and_load()
#   loads <AOT_DIR>/<name>/<name>.so directly (is_aot): no ninja, no nvcc, no mtime or flag check.
# Why it loads on the device: the .so files are tvm-ffi modules, not CPython extensions (no Py* symbols;
#   TVMFFI* symbols resolve against the libtvm_ffi.so that `import tvm_ffi` loads; same 0.1.15.post2
#   headers), need only libcudart.so.13 (loaded by torch cu130 first), libstdc++ (GLIBCXX <= 3.4.26) and
#   glibc >= 2.34 (topk and norm import dlopen/dlsym@GLIBC_2.34; this Debian 12 has 2.36), and hold
#   sm_90a SASS from nvcc 13.0 (the device's toolkit and driver: 13.0). They link no torch and no Python.
# How long / how big (this 2-core machine, MAX_JOBS=2, measured 2026-12-06 from scratch: 4 min 29 s in
#   all): silu_and_mul 5 s, gelu_tanh_and_mul 6 s, rope 40 s, topk 158 s, norm 52 s; stripped .so sizes
#   56 KB, 56 KB, 1.15 MB, 6.46 MB, 1.01 MB; the folder 8.8 MB (a call carries up to 64 MiB). Rebuild
#   with: rm -rf .kernelcraft/flashinfer-cache && bash scripts/flashinfer_prebuild.sh
# Needs here: python3 with torch (any build, CPU is fine: only its C++ ABI flag is read), jinja2,
#   filelock, packaging, ninja; nvcc 13.0 (CUDA_HOME); apache-tvm-ffi 0.1.15.post2 (installed from the
#   registry into the private site when python3 lacks it); curand and cublas headers (fetched with pip
#   from the nvidia-curand / nvidia-cublas wheels when the toolkit has no curand.h / cublasLt.h).
#
# Usage (repo root): bash scripts/flashinfer_prebuild.sh [module ...]   (default: all five)
#   env: OUT, WORK (scratch, default /tmp/fi-prebuild), WHEEL, CUDA_HOME, MAX_JOBS (2), STRIP (1)
# At the end it prints the lines to run on the device.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT=${OUT:-$REPO/.kernelcraft/flashinfer-cache}
WORK=${WORK:-/tmp/fi-prebuild}
WHEEL=${WHEEL:-$REPO/.whl-peers/small/flashinfer_python-0.6.13-py3-none-any.whl}
TVM_FFI_VERSION=0.1.15.post2
# Headers the toolkit here lacks, taken from NVIDIA's CUDA 13 wheels (headers only, nothing linked):
CURAND_PIN=${CURAND_PIN:-nvidia-curand==10.4.0.35}   # topk: sampling.cuh includes curand_kernel.h
CUBLAS_PIN=${CUBLAS_PIN:-nvidia-cublas==13.1.1.3}    # norm: trtllm/common/cudaUtils.h includes cublasLt.h
MODULES=("$@"); [ ${#MODULES[@]} -gt 0 ] || MODULES=(silu_and_mul gelu_tanh_and_mul rope topk norm)
export MAX_JOBS=${MAX_JOBS:-2}
export FLASHINFER_CUDA_ARCH_LIST=9.0          # -> (9, "0a"): -gencode=arch=compute_90a,code=sm_90a only
export FLASHINFER_WORKSPACE_BASE=$WORK/ws     # FlashInfer's JIT dir: $WORK/ws/.cache/flashinfer/0.6.13/90a/
unset FLASHINFER_JIT_DEBUG FLASHINFER_JIT_VERBOSE FLASHINFER_JIT_LINEINFO FLASHINFER_NVCC_THREADS CC CXX

if [ -z "${CUDA_HOME:-}" ]; then
    for c in /usr/local/cuda /usr/local/cuda-13.0 "$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"; do
        [ -x "$c/bin/nvcc" ] && [ -f "$c/include/cuda_runtime.h" ] && { CUDA_HOME=$c; break; }
    done
fi
export CUDA_HOME=${CUDA_HOME:?no CUDA toolkit found: set CUDA_HOME}
"$CUDA_HOME/bin/nvcc" --version | grep -q "release 13.0" || echo "WARNING: nvcc is not 13.0; the device has 13.0" >&2

# 1. FlashInfer itself (sources, headers, cutlass/cccl/spdlog) in a private site; its python deps are
#    not needed: the driver below imports flashinfer.jit.* without running flashinfer/__init__.py.
SITE=$WORK/site
mkdir -p "$SITE" "$WORK/stubs"
if [ ! -f "$SITE/flashinfer/_build_meta.py" ]; then
    python3 -m pip install -q --no-deps --no-compile --target "$SITE" "$WHEEL"
fi
if ! python3 -c "import tvm_ffi,sys; sys.exit(tvm_ffi.__version__ != '$TVM_FFI_VERSION')" 2>/dev/null; then
    [ -d "$WORK/tvmffi/tvm_ffi" ] || python3 -m pip install -q --no-deps --target "$WORK/tvmffi" "apache-tvm-ffi==$TVM_FFI_VERSION"
    TVMFFI_PATH=$WORK/tvmffi
fi

# 2. curand headers (topk), and a libcuda.so to satisfy FlashInfer's "-lcuda" where the toolkit has no stubs.
EXTRA_CUDAFLAGS=""
for dep in "curand.h $CURAND_PIN" "cublasLt.h $CUBLAS_PIN"; do
    set -- $dep; header=$1 pin=$2 dist=${2%%=*}
    [ -f "$CUDA_HOME/include/$header" ] && continue
    inc=$(dirname "$(ls "$WORK"/hdr/"$dist"/nvidia/*/include/"$header" 2>/dev/null | head -1)")
    if [ ! -f "$inc/$header" ]; then
        python3 -m pip download -q --no-deps --only-binary=:all: -d "$WORK/dl" "$pin"
        mkdir -p "$WORK/hdr/$dist"
        unzip -q -o "$WORK"/dl/"${dist//-/_}"-*.whl 'nvidia/*/include/*' -d "$WORK/hdr/$dist"
        inc=$(dirname "$(ls "$WORK"/hdr/"$dist"/nvidia/*/include/"$header" | head -1)")
    fi
    EXTRA_CUDAFLAGS="$EXTRA_CUDAFLAGS -I$inc"
done
EXTRA_LDFLAGS=""
if ! ls "$CUDA_HOME"/lib64/stubs/libcuda.so "$CUDA_HOME"/lib64/libcuda.so >/dev/null 2>&1; then
    echo 'void kernelcraft_libcuda_stub(void) {}' > "$WORK/stubs/stub.c"
    gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$WORK/stubs/libcuda.so" "$WORK/stubs/stub.c"
    EXTRA_LDFLAGS="-L$WORK/stubs"   # link-time only: the modules end up with no libcuda NEEDED entry
fi
export FLASHINFER_EXTRA_CUDAFLAGS=$EXTRA_CUDAFLAGS FLASHINFER_EXTRA_LDFLAGS=$EXTRA_LDFLAGS

# 3. Build with FlashInfer's own JitSpec.build (write_ninja + ninja -j$MAX_JOBS), then copy each .so.
mkdir -p "$OUT/flashinfer_jit_cache/jit_cache"
PYTHONPATH=$SITE${TVMFFI_PATH:+:$TVMFFI_PATH} python3 - "$OUT" "${MODULES[@]}" <<'EOF'
import os, shutil, subprocess, sys, time, types
site = [p for p in sys.path if os.path.isfile(os.path.join(p, "flashinfer", "_build_meta.py"))][0]
root = os.path.join(site, "flashinfer")
for name, path in (("flashinfer", root), ("flashinfer.jit", os.path.join(root, "jit"))):
    m = types.ModuleType(name); m.__path__ = [path]; sys.modules[name] = m  # skip the heavy __init__s
from flashinfer.jit import env as jit_env
from flashinfer.jit.activation import gen_act_and_mul_module
from flashinfer.jit.norm import gen_norm_module
from flashinfer.jit.rope import gen_rope_module
from flashinfer.jit.topk import gen_topk_module
gens = {"silu_and_mul": lambda: gen_act_and_mul_module("silu"),
        "gelu_tanh_and_mul": lambda: gen_act_and_mul_module("gelu_tanh"),
        "rope": gen_rope_module, "topk": gen_topk_module, "norm": gen_norm_module}
out = sys.argv[1]
dest_root = os.path.join(out, "flashinfer_jit_cache", "jit_cache")
print("flashinfer", jit_env.flashinfer_version, "JIT dir", jit_env.FLASHINFER_JIT_DIR, flush=True)
for name in sys.argv[2:]:
    spec = gens[name]()
    assert spec.name == name, (spec.name, name)
    t = time.time()
    spec.build(verbose=False)  # FlashInfer's ninja file and flags; raises with ninja's output on failure
    dt = time.time() - t
    dest = os.path.join(dest_root, name, name + ".so")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy2(spec.jit_library_path, dest)
    if os.environ.get("STRIP", "1") == "1":
        subprocess.run(["strip", "--strip-unneeded", dest], check=True)
    shutil.copy2(spec.ninja_path, os.path.join(dest_root, name, "build.ninja"))  # the record of the flags
    print(f"built {name:18s} {dt:7.1f} s  {os.path.getsize(dest):>9,d} bytes  {dest}", flush=True)
EOF

cat > "$OUT/flashinfer_jit_cache/__init__.py" <<'EOF'
"""Stand-in for FlashInfer's flashinfer-jit-cache package: FlashInfer 0.6.13 JIT modules prebuilt for
sm_90a with nvcc 13.0 by scripts/flashinfer_prebuild.sh (kernelcraft). flashinfer.jit.env finds this
package (importlib.util.find_spec), checks that __version__ starts with flashinfer's version, and takes
get_jit_cache_dir() as FLASHINFER_AOT_DIR; JitSpec.build_and_load() then loads
<dir>/<name>/<name>.so when it exists, without ninja or nvcc (any other module still JIT-builds)."""
import pathlib

__version__ = "0.6.13+cu130.sm90a.kernelcraft"


def get_jit_cache_dir() -> str:
    return str(pathlib.Path(__file__).resolve().parent / "jit_cache")
EOF
{
    echo "flashinfer 0.6.13 ($WHEEL), tvm-ffi $TVM_FFI_VERSION headers, arch list 9.0 (sm_90a)"
    "$CUDA_HOME/bin/nvcc" --version | grep release
    echo "built $(date -u +%FT%TZ) on $(uname -m), $(ldd --version | head -1)"
    (cd "$OUT/flashinfer_jit_cache/jit_cache" && sha256sum */*.so)
} > "$OUT/BUILD_INFO.txt"
rm -rf "$OUT/flashinfer_jit_cache/__pycache__"
du -sb "$OUT" | awk '{printf "folder %s: %d bytes\n", $2, $1}'
REL=${OUT#"$REPO"/}
cat <<EOF

On the device (repo root), AFTER 'source scripts/peer_wheels.sh ...' (it overwrites PYTHONPATH);
carry ["$REL"] with the call (the folder is git-ignored):
    export PYTHONPATH=\$PWD/$REL\${PYTHONPATH:+:\$PYTHONPATH}
    export FLASHINFER_DISABLE_JIT=1   # optional: a module missing here then fails at once instead of compiling
Check: python3 -c "import flashinfer.jit.env as e; print(e.FLASHINFER_AOT_DIR)"  -> .../flashinfer_jit_cache/jit_cache
EOF
