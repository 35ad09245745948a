"""The ``tvm-ffi`` binding: FlashInfer-Trace's default for C++/CUDA solutions.

The sources are built into a shared library with ``tvm_ffi.cpp.build`` (the ``apache-tvm-ffi``
package, as FlashInfer-Bench's ``TVMFFIBuilder`` does: ``-lcuda -lcublas`` added when there are
``.cu`` sources) and the entry symbol, exported with ``TVM_FFI_DLL_EXPORT_TYPED_FUNC``, is called with
torch tensors through DLPack. The library is cached by the sources' hash, the architecture and the
toolchain.

Without a CUDA device a solution with ``.cu`` sources cannot be linked here (no driver library), so
each source is compiled as the build would compile it (nvcc to an object, C++ through the compiler's
front end) and the solution is then skipped for running. Pure C++ solutions build and run on the CPU.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from kernelcraft.solution.model import Solution

MISSING = ("spec.binding is \"tvm-ffi\" (FlashInfer-Trace's default for C++/CUDA solutions), and building it "
           "needs the apache-tvm-ffi package, which is not installed in this environment: "
           "pip install apache-tvm-ffi (or pip install \"kernelcraft[fib]\")")


def _cuda_lib_dirs() -> list[str]:
    nvcc = shutil.which("nvcc")
    homes = [Path(nvcc).resolve().parent.parent] if nvcc else []
    homes += [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))]
    out = []
    for home in homes:
        for sub in ("targets/x86_64-linux/lib", "lib64", "lib"):
            if (home / sub / "libcudart.so").exists():
                out.append(str(home / sub))
    return list(dict.fromkeys(out))


def _compile_only(tvm_ffi, cpp: list[Path], cu: list[Path], src_dir: Path, arch: str) -> None:
    """Each source compiled as tvm_ffi.cpp.build would compile it, without linking."""
    from kernelcraft.solution.build import BuildError, CannotRun, _missing_toolkit_header

    includes = [f"-I{p}" for p in (str(src_dir), tvm_ffi.libinfo.find_include_path(),
                                   tvm_ffi.libinfo.find_dlpack_include_path())]
    nvcc = shutil.which("nvcc")
    out = src_dir / "objcheck"
    out.mkdir(exist_ok=True)
    for src in cu + cpp:
        if src.suffix == ".cu":
            if nvcc is None:
                raise CannotRun("nvcc not found: cannot even compile CUDA sources here")
            cmd = [nvcc, "-c", "-std=c++17", "-O2", "-Xcompiler", "-fPIC",
                   f"-gencode=arch=compute_{arch},code=sm_{arch}", *includes, "-o", str(out / (src.name + ".o")), str(src)]
        else:
            cmd = [os.environ.get("CXX", "c++"), "-fsyntax-only", "-std=c++17", "-fPIC", *includes, str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            msg = (proc.stdout + proc.stderr).replace(str(src_dir) + os.sep, "")
            missing = _missing_toolkit_header(msg, cpp + cu)
            if missing:
                raise CannotRun(f"cannot compile-check here: this machine's CUDA toolkit lacks {missing} "
                                f"(needed by {src.name}); build it on the target device")
            raise BuildError(f"{src.name} failed to compile:\n{msg[-20000:]}")


def build_tvm_ffi(solution: Solution, device: str, src_dir: Path, arch: str) -> Callable:
    """The entry symbol of the built library, as a callable taking torch tensors."""
    import torch

    from kernelcraft.solution.build import CPP_SUFFIXES, CUDA_SUFFIXES, BuildError, CannotRun

    try:
        import tvm_ffi
        import tvm_ffi.cpp
        import tvm_ffi.libinfo
    except ImportError:
        raise CannotRun(MISSING) from None
    cpp = [src_dir / s.path for s in solution.sources if s.path.endswith(CPP_SUFFIXES)]
    cu = [src_dir / s.path for s in solution.sources if s.path.endswith(CUDA_SUFFIXES)]
    if not cpp and not cu:
        raise BuildError("no .cu or .cpp source to compile")
    on_device = device.startswith("cuda") and torch.cuda.is_available()
    if cu and not on_device:
        _compile_only(tvm_ffi, cpp, cu, src_dir, arch)
        raise CannotRun(f"compiled for sm_{arch} (tvm-ffi sources, nvcc and host compiler, no link); running "
                        "needs a CUDA device")
    name = f"kc_tvm_{solution.source_hash[:16]}"
    lib = src_dir / "build" / f"{name}.so"
    if not lib.is_file():
        ldflags = []
        if cu:
            ldflags = [f"-L{d}" for d in _cuda_lib_dirs()] + ["-lcuda", "-lcublas"]
        os.environ["TVM_FFI_CUDA_ARCH_LIST"] = f"{arch[:-1]}.{arch[-1]}"
        try:
            built = tvm_ffi.cpp.build(name=name, cpp_files=[str(p) for p in cpp], cuda_files=[str(p) for p in cu],
                                      extra_include_paths=[str(src_dir)], extra_ldflags=ldflags,
                                      build_directory=str(src_dir / "build"))
        except Exception as e:  # noqa: BLE001 - the compiler's or linker's output is the build's verdict
            raise BuildError(f"tvm-ffi build failed: {str(e)[-20000:]}") from None
        lib = Path(built)
    try:
        module = tvm_ffi.load_module(str(lib))
    except Exception as e:  # noqa: BLE001 - unresolved symbols, a library for another machine
        raise BuildError(f"the tvm-ffi library built but did not load: {type(e).__name__}: {e}") from None
    symbol = solution.spec.entry_symbol
    try:
        fn = getattr(module, symbol)
    except AttributeError:
        raise BuildError(f"the library exports no {symbol!r}: export it with "
                         f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({symbol}, your_function)") from None

    def call(*args):
        out = fn(*args)
        # a value-returning entry gives tvm_ffi tensors back: hand the judge torch tensors
        if isinstance(out, tuple | list):
            return type(out)(_to_torch(o) for o in out)
        return _to_torch(out)

    return call


def _to_torch(x):
    import torch

    if x is None or isinstance(x, torch.Tensor) or not hasattr(x, "__dlpack__"):
        return x
    return torch.from_dlpack(x)
