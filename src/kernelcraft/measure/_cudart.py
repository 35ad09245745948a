"""The few CUDA runtime calls torch does not expose, through the libcudart torch already loaded.

Used by the timer (trusted code): persisting-L2 carve-outs are disabled for the worker's context
and reset before every timed call, so a candidate cannot keep its data resident across the timer's
L2 flush.
"""

from __future__ import annotations

import ctypes
from functools import cache

CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06  # enum cudaLimit, CUDA runtime API


@cache
def _lib() -> ctypes.CDLL | None:
    # The libcudart torch loaded (its own wheel's or the system's), found in this process's maps,
    # so no second runtime with another version is pulled in.
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libcudart.so" in line}
    except OSError:
        paths = set()
    for p in sorted(paths):
        try:
            return ctypes.CDLL(p)
        except OSError:
            continue
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def available() -> bool:
    return _lib() is not None


def disable_persisting_l2() -> int:
    """Set the persisting-L2 limit to 0 for the current device; returns the cudaError code (0 = ok)."""
    lib = _lib()
    if lib is None:
        return -1
    return int(lib.cudaDeviceSetLimit(ctypes.c_int(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE), ctypes.c_size_t(0)))


def persisting_l2_limit() -> int:
    lib = _lib()
    if lib is None:
        return -1
    value = ctypes.c_size_t(0)
    err = lib.cudaDeviceGetLimit(ctypes.byref(value), ctypes.c_int(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE))
    return int(value.value) if err == 0 else -1


def reset_persisting_l2() -> int:
    """Demote every persisting L2 line to normal (cudaCtxResetPersistingL2Cache); returns the error code."""
    lib = _lib()
    if lib is None:
        return -1
    return int(lib.cudaCtxResetPersistingL2Cache())


def profiler_start() -> int:
    """cudaProfilerStart: Nsight Compute (``--profile-from-start off``) profiles from here."""
    lib = _lib()
    return -1 if lib is None else int(lib.cudaProfilerStart())


def profiler_stop() -> int:
    lib = _lib()
    return -1 if lib is None else int(lib.cudaProfilerStop())


CUDA_HOST_ALLOC_MAPPED = 0x02  # cudaHostAllocMapped


def mapped_host_word() -> tuple[int, int] | None:
    """Four bytes of pinned host memory mapped into the device's address space (cudaHostAlloc with
    cudaHostAllocMapped): (host address, device address from cudaHostGetDevicePointer), or None where the
    runtime is missing or refuses. The device address is the one a kernel may read: a pinned tensor's own
    address (torch's pin_memory) faulted as a kernel argument on the H200 host (illegal memory access)."""
    lib = _lib()
    if lib is None:
        return None
    host = ctypes.c_void_p(0)
    if int(lib.cudaHostAlloc(ctypes.byref(host), ctypes.c_size_t(4), ctypes.c_uint(CUDA_HOST_ALLOC_MAPPED))) != 0:
        return None
    dev = ctypes.c_void_p(0)
    if int(lib.cudaHostGetDevicePointer(ctypes.byref(dev), host, ctypes.c_uint(0))) != 0:
        lib.cudaFreeHost(host)
        return None
    ctypes.c_int32.from_address(host.value).value = 0
    return int(host.value), int(dev.value)
