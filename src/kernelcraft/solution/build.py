"""Builders: turn a Solution into a Python callable inside the worker process.

- ``python`` / ``triton``: the sources are written into a fresh package and the entry file imported.
  Import failures (syntax errors included) are build failures.
- ``cuda`` / ``cpp`` with ``binding = "torch"``: a torch C++ extension built with
  ``torch.utils.cpp_extension.load`` for the device's compute capability only. On a machine without
  a CUDA device every source is still compiled (nvcc for ``.cu``, the host compiler for ``.cpp``)
  so compile errors surface, and the solution is then skipped for running. The build directory is
  named by the sources' hash and the toolchain, and sources are rewritten only when their bytes
  change, so a second build of the same solution is a no-op for ninja.
- ``cuda`` / ``cpp`` with ``binding = "tvm-ffi"`` (FlashInfer-Trace's default when no binding is given):
  a shared library built by ``apache-tvm-ffi`` (:mod:`kernelcraft.solution.tvm_ffi`); without a CUDA
  device ``.cu`` sources are compiled but not linked, and the solution skipped for running.
- ``cuda`` with ``binding = "kernelcraft"``: every ``.cu`` compiled to a cubin with ``nvcc -cubin``
  (content-addressed cache, :mod:`kernelcraft.solution.cubin`), loaded with cuda.core or CuPy, and
  the Python entry file imported with a ``kernels`` global through which it launches the
  ``extern "C" __global__`` kernels (:mod:`kernelcraft.solution.cuda_binding`). Seconds, not minutes:
  no torch headers, no host compiler, no link. Without a CUDA device the cubins are still compiled
  and the entry imported, then the solution is skipped for running.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

from kernelcraft.solution._traceback import candidate_traceback
from kernelcraft.solution.model import Solution

CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".c")
CUDA_SUFFIXES = (".cu",)


class BuildError(Exception):
    """The solution did not build; the message holds what the compiler or importer said."""


class CannotRun(Exception):
    """The solution built (or was checked) but cannot run on this device; the message says why."""


def cache_root() -> Path:
    root = Path(os.environ.get("KERNELCRAFT_CACHE", Path.home() / ".cache" / "kernelcraft"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def write_sources(solution: Solution, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for src in solution.sources:
        f = dest / src.path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(src.content, encoding="utf-8")  # the bytes the static gate parsed
    return dest


def build(solution: Solution, device: str, workdir: Path) -> Callable:
    lang = solution.spec.language
    if lang in ("python", "triton"):
        return _build_python(solution, workdir)
    if lang in ("cuda", "cpp"):
        binding = solution.spec.binding or "tvm-ffi"
        if binding == "kernelcraft":
            return _build_kernelcraft(solution, device, workdir)
        if binding == "tvm-ffi":
            return _build_tvm_ffi(solution, device)
        if binding != "torch":
            raise CannotRun(
                f"spec.binding is {binding!r}; this harness builds C++/CUDA as torch extensions "
                "(\"binding\": \"torch\", the entry point bound with PYBIND11_MODULE), tvm-ffi libraries "
                "(\"tvm-ffi\", FlashInfer-Trace's default) or cubins launched from Python (\"binding\": \"kernelcraft\")"
            )
        return _build_torch_extension(solution, device, workdir)
    raise CannotRun(f"no builder for language {lang!r}")


def _build_python(solution: Solution, workdir: Path) -> Callable:
    package = f"kc_sol_{solution.source_hash[:16]}"
    write_sources(solution, workdir / package)
    (workdir / package / "__init__.py").touch()
    if str(workdir) not in sys.path:
        sys.path.insert(0, str(workdir))
    module_name = package + "." + solution.spec.entry_file.removesuffix(".py").replace("/", ".")
    try:
        module = importlib.import_module(module_name)
    except BaseException as e:  # noqa: BLE001 - any failure to import is the candidate's build failure
        raise BuildError(candidate_traceback(e)) from None
    fn = getattr(module, solution.spec.entry_symbol, None)
    if not callable(fn):
        raise BuildError(f"{solution.spec.entry_file} defines no callable {solution.spec.entry_symbol!r}")
    return fn


def _arch_for(device: str, solution: Solution) -> str:
    if device.startswith("cuda"):
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability(device)
            return f"{major}{minor}"
    names = " ".join(solution.spec.target_hardware).lower()
    for key, arch in (("b300", "103"), ("b200", "100"), ("h100", "90"), ("h200", "90"), ("h20", "90"),
                      ("a100", "80"), ("l40", "89"), ("l4", "89"), ("4090", "89")):
        if key in names:
            return arch
    return "90"


def _build_torch_extension(solution: Solution, device: str, workdir: Path) -> Callable:
    import torch

    h = solution.source_hash[:16]
    arch = _arch_for(device, solution)
    src_dir = _write_if_changed(solution, cache_root() / "src" / h)
    compiled = [src_dir / s.path for s in solution.sources if s.path.endswith(CPP_SUFFIXES + CUDA_SUFFIXES)]
    if not compiled:
        raise BuildError("no .cu or .cpp source to compile")
    if not (device.startswith("cuda") and torch.cuda.is_available()):
        _compile_only(compiled, src_dir, arch, h)
        raise CannotRun(f"compiled for sm_{arch} (nvcc and host compiler, no link); running needs a CUDA device")
    from torch.utils.cpp_extension import load

    build_dir = cache_root() / "torch_ext" / f"{h}_sm{arch}_{_toolchain_tag()}"
    build_dir.mkdir(parents=True, exist_ok=True)
    os.environ["TORCH_CUDA_ARCH_LIST"] = f"{arch[:-1]}.{arch[-1]}"
    try:
        module = load(
            name=f"kc_{h}",
            sources=[str(p) for p in compiled],
            extra_cflags=["-O3", "-std=c++17"],
            extra_cuda_cflags=["-O3", "-std=c++17", "--expt-relaxed-constexpr"],
            extra_include_paths=[str(src_dir)],
            build_directory=str(build_dir),
            verbose=False,
        )
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError with the compiler's output
        raise BuildError(str(e)[-20000:]) from None
    fn = getattr(module, solution.spec.entry_symbol, None)
    if fn is None:
        raise BuildError(f"the extension exports no {solution.spec.entry_symbol!r}; bind it in PYBIND11_MODULE")
    return fn


def _build_tvm_ffi(solution: Solution, device: str) -> Callable:
    from kernelcraft.solution.tvm_ffi import build_tvm_ffi

    arch = _arch_for(device, solution)
    src_dir = _write_if_changed(solution, cache_root() / "tvm_ffi" / f"{solution.source_hash[:16]}_sm{arch}_{_toolchain_tag()}")
    return build_tvm_ffi(solution, device, src_dir, arch)


def _write_if_changed(solution: Solution, dest: Path) -> Path:
    """Write the sources, leaving a file whose bytes are already right untouched: ninja decides by
    modification time, and a rewritten source makes it rebuild an extension that is up to date."""
    for src in solution.sources:
        f = dest / src.path
        data = src.content.encode()
        if f.is_file() and f.read_bytes() == data:
            continue
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f".{f.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, f)  # a parallel worker never compiles a half-written file
    return dest


def _toolchain_tag() -> str:
    """Part of a build directory's name: a torch or CUDA upgrade must not reuse objects built by the old one."""
    import torch

    from kernelcraft.solution.cubin import find_nvcc, nvcc_version

    nvcc = find_nvcc()
    ident = f"{torch.__version__}|{torch.version.cuda}|{nvcc_version(nvcc) if nvcc else 'no-nvcc'}"
    return hashlib.sha256(ident.encode()).hexdigest()[:8]


def _build_kernelcraft(solution: Solution, device: str, workdir: Path) -> Callable:
    """Cubins through nvcc (cached), loaded on the device, and the Python entry imported with ``kernels``."""
    import torch

    from kernelcraft.solution import cubin
    from kernelcraft.solution.cuda_binding import LoaderUnavailable, load_kernels, offline_kernels

    spec = solution.spec
    if spec.language != "cuda":
        raise BuildError(f"binding \"kernelcraft\" builds CUDA (.cu) sources; spec.language is {spec.language!r}")
    if not spec.entry_file.endswith(".py"):
        raise BuildError(f"binding \"kernelcraft\": entry_point {spec.entry_point!r} must name a Python file "
                         "(e.g. \"launch.py::run\") that launches the kernels through `kernels`")
    host = [s.path for s in solution.sources if s.path.endswith(CPP_SUFFIXES)]
    if host:
        raise BuildError(f"binding \"kernelcraft\" compiles .cu files to cubins and links no host code: {host} "
                         "cannot be built this way (move the kernels to .cu files, or use \"binding\": \"torch\")")
    arch = _arch_for(device, solution)
    on_device = device.startswith("cuda") and torch.cuda.is_available()
    try:
        built = cubin.compile_cubins(solution.sources, arch, cache_root())
    except cubin.NvccError as e:
        raise BuildError(str(e)) from None
    except cubin.NvccMissing as e:
        raise CannotRun(str(e)) from None
    if not built.kernels:
        mangled = sorted(n for names in built.mangled.values() for n in names)
        raise BuildError("no extern \"C\" __global__ kernel in the .cu sources: the kernels object finds kernels "
                         "by their unmangled names, so declare them extern \"C\" __global__"
                         + (f" (found only mangled ones: {', '.join(mangled[:5])})" if mangled else ""))
    print(f"kernelcraft binding: sm_{arch}, {built.summary()}", flush=True)
    if on_device:
        index = torch.device(device).index
        try:
            kernels = load_kernels(built, torch.cuda.current_device() if index is None else index)
        except LoaderUnavailable as e:
            raise CannotRun(f"compiled for sm_{arch}, but {e}") from None
        except Exception as e:  # noqa: BLE001 - the driver refused the cubin (no image for this GPU, ...)
            raise BuildError(f"the cubins compiled but did not load on {device}: {type(e).__name__}: {e}") from None
        print(f"kernelcraft binding: loaded with {kernels.loader}", flush=True)
    else:
        kernels = offline_kernels(built)
    fn = _import_entry(solution, workdir, kernels)
    if not on_device:
        raise CannotRun(f"compiled for sm_{arch} (nvcc -cubin: {built.summary()}); the entry imports; "
                        "running needs a CUDA device")
    return fn


def _import_entry(solution: Solution, workdir: Path, kernels) -> Callable:
    """Import the entry file as part of a package of the sources, with ``kernels`` already in its globals."""
    from kernelcraft.solution.cubin import KERNELS_NAME

    package = f"kc_sol_{solution.source_hash[:16]}"
    write_sources(solution, workdir / package)
    (workdir / package / "__init__.py").touch()
    if str(workdir) not in sys.path:
        sys.path.insert(0, str(workdir))
    module_name = package + "." + solution.spec.entry_file.removesuffix(".py").replace("/", ".")
    try:
        spec = importlib.util.find_spec(module_name)
        module = importlib.util.module_from_spec(spec)
        setattr(module, KERNELS_NAME, kernels)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 - any failure to import is the candidate's build failure
        sys.modules.pop(module_name, None)
        raise BuildError(candidate_traceback(e)) from None
    fn = getattr(module, solution.spec.entry_symbol, None)
    if not callable(fn):
        raise BuildError(f"{solution.spec.entry_file} defines no callable {solution.spec.entry_symbol!r}")
    return fn


def _missing_toolkit_header(compiler_output: str, sources: list[Path]) -> str | None:
    """A header the compiler could not find that is none of the solution's own files: the
    machine's toolkit is incomplete (a CPU box with nvcc but no cuBLAS headers), not the source wrong."""
    import re

    own = {p.name for p in sources}
    for m in re.finditer(r"fatal error: ([\w./-]+): No such file or directory", compiler_output):
        if Path(m.group(1)).name not in own:
            return m.group(1)
    return None


def _compile_only(sources: list[Path], src_dir: Path, arch: str, h: str) -> None:
    """Compile every source as the torch extension build would, without linking: nvcc to an object
    file (device code generated, so ptxas errors show), host sources checked by the compiler's front end."""
    import torch

    out = cache_root() / "objcheck" / f"{h}_sm{arch}"
    if (out / "ok").exists():
        return
    out.mkdir(parents=True, exist_ok=True)
    torch_inc = Path(torch.__file__).parent / "include"
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    includes = [f"-I{src_dir}", f"-I{torch_inc}", f"-I{torch_inc / 'torch/csrc/api/include'}",
                f"-I{sysconfig.get_paths()['include']}", f"-I{cuda_home}/include"]
    if not (torch_inc / "c10/cuda/impl/cuda_cmake_macros.h").exists():
        # CPU builds of torch ship c10/cuda headers without this generated one; it only sets
        # build macros, and nothing is linked here, so an equivalent stub is enough to compile.
        stub = cache_root() / "stub_include"
        (stub / "c10/cuda/impl").mkdir(parents=True, exist_ok=True)
        (stub / "c10/cuda/impl/cuda_cmake_macros.h").write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        includes.append(f"-I{stub}")
    defines = [f"-DTORCH_EXTENSION_NAME=kc_{h}", "-DTORCH_API_INCLUDE_EXTENSION_H",
               f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]
    nvcc = shutil.which("nvcc") or f"{cuda_home}/bin/nvcc"
    cxx = os.environ.get("CXX", "c++")
    for src in sources:
        obj = out / (src.name + ".o")
        if src.suffix in CUDA_SUFFIXES:
            if not Path(nvcc).exists():
                raise CannotRun("nvcc not found: cannot even compile CUDA sources here")
            cmd = [nvcc, "-c", "-std=c++17", "-O3", "--expt-relaxed-constexpr",
                   f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Xcompiler", "-fPIC",
                   *includes, *defines, "-o", str(obj), str(src)]
        else:
            # -fsyntax-only: every front-end error (templates included) without code generation, 20 s
            # instead of 32 s for a binding that includes <torch/extension.h> (2-core machine)
            cmd = [cxx, "-fsyntax-only", "-std=c++17", "-fPIC", *includes, *defines, str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            msg = (proc.stdout + proc.stderr).replace(str(src_dir) + os.sep, "")
            missing = _missing_toolkit_header(msg, sources)
            if missing:
                raise CannotRun(f"cannot compile-check here: this machine's CUDA toolkit lacks {missing} "
                                f"(needed by {src.name} through its includes); build it on the target device")
            lines = [ln for ln in msg.splitlines() if "warning" not in ln.lower() or "error" in ln.lower()]
            raise BuildError(f"{src.name} failed to compile:\n" + "\n".join(lines)[-20000:])
    (out / "ok").touch()
