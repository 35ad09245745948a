"""The ``kernelcraft`` CUDA binding at run time: the ``kernels`` object a solution's Python entry
file launches its compiled kernels through.

The builder puts ``kernels`` into the entry module's globals before executing it; each
``extern "C" __global__`` kernel of the solution's ``.cu`` files is an attribute::

    kernels.my_kernel(grid, block, *args, shared_mem=0)

- ``grid``, ``block``: an int or a tuple of 1-3 ints (missing dimensions are 1); every dimension
  >= 1 (a zero-size launch is refused: skip the call when there is no work).
- ``args``: exactly the kernel's parameters, in order, checked against the kinds and sizes nvcc
  compiled (read from the PTX). A ``torch.Tensor`` goes to a pointer parameter as its device pointer
  (it must be a contiguous CUDA tensor on the current device; the error names the argument); ``None``
  is a null pointer; a Python ``int`` becomes an integer of the parameter's width (range-checked:
  ``int`` is 32 bits, ``int64_t``/``size_t`` 64); a Python ``float`` (or int) becomes ``float32``
  for a ``float`` parameter and ``float64`` for a ``double``. A numpy scalar (``np.int64(5)``,
  ``np.float16(x)`` for a ``__half``) passes its exact bits and must have the parameter's size.
- ``shared_mem``: dynamic shared memory in bytes; above 48 KiB the kernel's limit is raised for you.
- The launch goes onto torch's current CUDA stream, asynchronously, like any torch op.

Loading uses cuda.core (>= 0.2: ``ObjectCode.from_cubin``, ``launch(stream, LaunchConfig, kernel,
*args)``) and falls back to CuPy (``RawModule(path=...)``) when cuda.core is missing or its API
differs; ``KERNELCRAFT_CUDA_LOADER=cuda.core|cupy`` forces one.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
from typing import Any

import numpy as np

from kernelcraft.solution.cubin import CubinBuild, KernelSig, Param

MAX_BLOCK_THREADS = 1024
DEFAULT_SMEM_LIMIT = 48 * 1024  # bytes of dynamic shared memory a kernel may use without opting in
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8  # CUfunction_attribute in cuda.h
_INT_TYPES = {1: (np.int8, np.uint8), 2: (np.int16, np.uint16), 4: (np.int32, np.uint32), 8: (np.int64, np.uint64)}
_FLOAT_TYPES = {2: np.float16, 4: np.float32, 8: np.float64}


class Kernels:
    """The solution's kernels by name: ``kernels.NAME(grid, block, *args, shared_mem=0)``."""

    def __init__(self, launchers: dict[str, Kernel], build: CubinBuild, loader: str):
        self._launchers = launchers
        self._build = build
        self.loader = loader  # "cuda.core", "cupy", or "none" (compiled on a machine without a GPU)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._launchers))

    def __getattr__(self, name: str) -> Kernel:
        launchers = self.__dict__.get("_launchers", {})
        if name in launchers:
            return launchers[name]
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(self._missing(name))

    def __getitem__(self, name: str) -> Kernel:
        try:
            return self._launchers[name]
        except KeyError:
            raise KeyError(self._missing(name)) from None

    def __dir__(self):
        return [*super().__dir__(), *self._launchers]

    def __repr__(self) -> str:
        return f"<kernels ({self.loader}): {', '.join(self.names)}>"

    def _missing(self, name: str) -> str:
        msg = f"no extern \"C\" __global__ kernel named {name!r}; the .cu sources define: {', '.join(self.names) or 'none'}"
        mangled = [n for names in self._build.mangled.values() for n in names]
        if mangled:
            msg += f" (and {len(mangled)} kernel(s) without extern \"C\", which have mangled names: declare them extern \"C\")"
        return msg


class Kernel:
    """One compiled kernel: call it as ``kernel(grid, block, *args, shared_mem=0)``."""

    def __init__(self, sig: KernelSig, backend: Any, handle: Any, device_index: int | None):
        self.sig = sig
        self._backend = backend
        self._handle = handle
        self._device_index = device_index
        self._smem_limit = DEFAULT_SMEM_LIMIT

    @property
    def name(self) -> str:
        return self.sig.name

    @property
    def signature(self) -> str:
        return self.sig.describe()

    def __repr__(self) -> str:
        return f"<kernel {self.signature} from {self.sig.source}>"

    def __call__(self, grid, block, *args, shared_mem: int = 0) -> None:
        g = _dim3(grid, "grid", self.name)
        b = _dim3(block, "block", self.name)
        if b[0] * b[1] * b[2] > MAX_BLOCK_THREADS:
            raise ValueError(f"{self.name}: block {b} has {b[0] * b[1] * b[2]} threads; at most {MAX_BLOCK_THREADS}")
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, int | np.integer) or shared_mem < 0:
            raise ValueError(f"{self.name}: shared_mem must be a non-negative int of bytes, got {shared_mem!r}")
        packed = self.pack(args)
        if self._backend is None:
            raise RuntimeError(f"{self.name}: compiled only; launching needs a CUDA device")
        if shared_mem > self._smem_limit:
            self._backend.set_max_dynamic_smem(self._handle, int(shared_mem))
            self._smem_limit = int(shared_mem)
        self._backend.launch(self._handle, g, b, int(shared_mem), packed)

    def pack(self, args: tuple) -> list[np.generic]:
        """The kernel's arguments as numpy scalars of the compiled parameter types (checked)."""
        params = self.sig.params
        if len(args) != len(params):
            raise TypeError(f"{self.signature} takes {len(params)} argument(s), got {len(args)}")
        return [_convert(p, a, f"{self.name} argument {i} ({p.name}: {p.ctype})", self._device_index)
                for i, (p, a) in enumerate(zip(params, args, strict=True))]


def _dim3(v, what: str, kernel: str) -> tuple[int, int, int]:
    dims = (v,) if isinstance(v, int | np.integer) else v
    if not isinstance(dims, tuple | list) or not 1 <= len(dims) <= 3 or any(
            isinstance(d, bool) or not isinstance(d, int | np.integer) for d in dims):
        raise TypeError(f"{kernel}: {what} must be an int or a tuple of 1-3 ints, got {v!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if min(dims) < 1:
        raise ValueError(f"{kernel}: {what} {dims} has a dimension < 1; skip the launch when there is no work")
    limit = (2**31 - 1, 65535, 65535) if what == "grid" else (1024, 1024, 64)
    for d, lim in zip(dims, limit, strict=True):
        if d > lim:
            raise ValueError(f"{kernel}: {what} {dims} exceeds the CUDA limit {limit}")
    return dims


def _convert(p: Param, a: Any, where: str, device_index: int | None) -> np.generic:
    import torch

    pointer = p.kind == "int" and p.size == 8
    if isinstance(a, torch.Tensor):
        if not pointer:
            raise TypeError(f"{where}: got a tensor, but this parameter is not a pointer; "
                            "pass a Python number for a scalar parameter")
        if not a.is_contiguous():
            raise ValueError(f"{where}: tensor is not contiguous (shape {tuple(a.shape)}, stride {a.stride()}); "
                             "the kernel gets a bare pointer and would read the wrong elements: pass a contiguous tensor")
        if a.device.type != "cuda":
            raise ValueError(f"{where}: tensor is on {a.device}; kernels read device memory: pass a CUDA tensor")
        if device_index is not None and a.device.index != device_index:
            raise ValueError(f"{where}: tensor is on {a.device}, the kernel runs on cuda:{device_index}")
        return np.uint64(a.data_ptr())
    if a is None:
        if pointer:
            return np.uint64(0)
        raise TypeError(f"{where}: None is only accepted for pointer parameters")
    if isinstance(a, np.generic):
        ok = {"int": isinstance(a, np.integer | np.bool_), "float": isinstance(a, np.floating), "bytes": True}[p.kind]
        if not ok or a.itemsize != p.size:
            raise TypeError(f"{where}: got numpy {a.dtype} ({a.itemsize} bytes); the parameter takes {p.size} bytes "
                            f"of {'a struct' if p.kind == 'bytes' else p.kind}")
        return a
    if p.kind == "bytes":
        raise TypeError(f"{where}: a {p.size}-byte struct passed by value (e.g. __nv_bfloat16, __half, a user "
                        "struct) takes a numpy scalar of that size (np.float16 for __half); or take a float "
                        "parameter and convert inside the kernel")
    if isinstance(a, bool | int):
        if p.kind == "float" and not isinstance(a, bool):
            return _FLOAT_TYPES[p.size](a)
        if p.kind == "int":
            lo, hi = -(1 << (8 * p.size - 1)), (1 << (8 * p.size)) - 1
            if not lo <= a <= hi:
                raise OverflowError(f"{where}: {a} does not fit a {8 * p.size}-bit integer")
            signed, unsigned = _INT_TYPES[p.size]
            return signed(a) if a < 0 else unsigned(a)
    if isinstance(a, float):
        if p.kind == "float":
            with np.errstate(over="ignore"):
                v = _FLOAT_TYPES[p.size](a)
            if np.isinf(v) and not np.isinf(a):
                raise OverflowError(f"{where}: {a!r} is out of {p.ctype} range")
            return v
        raise TypeError(f"{where}: got float {a!r} for an integer parameter; pass an int")
    raise TypeError(f"{where}: cannot pass a {type(a).__name__}; pass a tensor, an int, a float or a numpy scalar")


# ----------------------------------------------------------------------------------------------
# loading


def offline_kernels(build: CubinBuild) -> Kernels:
    """The kernels of a build on a machine without a CUDA device: names and signatures, no launches."""
    return Kernels({n: Kernel(sig, None, None, None) for n, sig in build.kernels.items()}, build, "none")


def load_kernels(build: CubinBuild, device_index: int) -> Kernels:
    """Load every cubin of ``build`` on ``cuda:device_index`` with cuda.core, else CuPy."""
    choice = os.environ.get("KERNELCRAFT_CUDA_LOADER", "auto")
    order = {"auto": ["cuda.core", "cupy"], "cuda.core": ["cuda.core"], "cupy": ["cupy"]}.get(choice)
    if order is None:
        raise ValueError(f"KERNELCRAFT_CUDA_LOADER={choice!r}: use cuda.core, cupy or auto")
    failures = []
    for name in order:
        try:
            backend = _BACKENDS[name](device_index)
            handles = {}
            for source, path in build.cubins.items():
                names = [n for n, sig in build.kernels.items() if sig.source == source]
                handles.update(backend.load(path, names))
        except (ImportError, AttributeError, TypeError, NotImplementedError) as e:
            # missing, too old, or an API other than the one documented: try the next loader
            failures.append(f"{name}: {type(e).__name__}: {e}")
            continue
        launchers = {n: Kernel(sig, backend, handles[n], device_index) for n, sig in build.kernels.items()}
        return Kernels(launchers, build, backend.name)
    raise LoaderUnavailable("cannot load cubins: " + "; ".join(failures))


class LoaderUnavailable(Exception):
    """Neither cuda.core nor CuPy can load cubins on this machine."""


def _torch_stream_handle(device_index: int) -> int:
    import torch

    return torch.cuda.current_stream(device_index).cuda_stream


class _CudaCore:
    name = "cuda.core"

    def __init__(self, device_index: int):
        try:
            from cuda.core import Device, LaunchConfig, ObjectCode, Stream, launch
        except ImportError:
            from cuda.core.experimental import Device, LaunchConfig, ObjectCode, Stream, launch
        try:
            version = importlib.metadata.version("cuda-core")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        parts = version.split(".")
        if version != "unknown" and len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() \
                and (int(parts[0]), int(parts[1])) < (0, 2):
            raise ImportError(f"cuda.core {version} predates launch(stream, config, kernel, *args) (0.2)")
        self.name = f"cuda.core {version}"
        self._LaunchConfig, self._ObjectCode, self._Stream, self._launch = LaunchConfig, ObjectCode, Stream, launch
        self._device_index = device_index
        Device(device_index).set_current()  # torch's primary context, made current on this thread
        self._streams: dict[int, Any] = {}
        self._configs: dict[tuple, Any] = {}
        self._modules: list[Any] = []  # keep the libraries loaded as long as the kernels

    def load(self, path, names: list[str]) -> dict[str, Any]:
        code = self._ObjectCode.from_cubin(path.read_bytes())
        self._modules.append(code)
        return {n: code.get_kernel(n) for n in names}

    def launch(self, kernel, grid, block, smem: int, args: list) -> None:
        h = _torch_stream_handle(self._device_index)
        stream = self._streams.get(h)
        if stream is None:
            stream = self._streams[h] = self._Stream.from_handle(h)
        key = (grid, block, smem)
        config = self._configs.get(key)
        if config is None:
            if len(self._configs) > 256:
                self._configs.clear()
            config = self._configs[key] = self._LaunchConfig(grid=grid, block=block, shmem_size=smem)
        self._launch(stream, config, kernel, *args)

    def set_max_dynamic_smem(self, kernel, nbytes: int) -> None:
        # cuda.core exposes kernel attributes read-only; the driver call is two lines of ctypes.
        # Its kernels are CUkernel handles (library API); cuFuncSetAttribute, which also accepts a
        # CUkernel (applied in the current context), is the fallback for a CUfunction handle.
        lib = ctypes.CDLL("libcuda.so.1")
        handle = ctypes.c_void_p(int(kernel.handle))
        attr = ctypes.c_int(_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
        dev = ctypes.c_int()
        _check(lib.cuDeviceGet(ctypes.byref(dev), ctypes.c_int(self._device_index)), "cuDeviceGet")
        if lib.cuKernelSetAttribute(attr, ctypes.c_int(nbytes), handle, dev) != 0:
            _check(lib.cuFuncSetAttribute(handle, attr, ctypes.c_int(nbytes)),
                   f"cuKernelSetAttribute/cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {nbytes})")


def _check(result: int, what: str) -> None:
    if result != 0:
        raise RuntimeError(f"{what} failed with CUresult {result}")


class _Cupy:
    name = "cupy"

    def __init__(self, device_index: int):
        import cupy

        self.name = f"cupy {cupy.__version__}"
        self._cupy = cupy
        self._device_index = device_index
        self._streams: dict[int, Any] = {}
        self._modules: list[Any] = []

    def load(self, path, names: list[str]) -> dict[str, Any]:
        with self._cupy.cuda.Device(self._device_index):
            module = self._cupy.RawModule(path=str(path))
            self._modules.append(module)
            return {n: module.get_function(n) for n in names}

    def launch(self, fn, grid, block, smem: int, args: list) -> None:
        h = _torch_stream_handle(self._device_index)
        stream = self._streams.get(h)
        if stream is None:
            stream = self._streams[h] = self._cupy.cuda.ExternalStream(h)
        fn(grid, block, tuple(args), shared_mem=smem, stream=stream)

    def set_max_dynamic_smem(self, fn, nbytes: int) -> None:
        fn.max_dynamic_shared_size_bytes = nbytes


_BACKENDS = {"cuda.core": _CudaCore, "cupy": _Cupy}
