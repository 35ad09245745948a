"""Memory the judge and a runner both see: the inputs the judge made, the outputs it reads back.

The judge allocates an *arena* per workload, fills the inputs, and hands the runner a file
descriptor for it (over a Unix socket, ``SCM_RIGHTS``); the runner maps the same memory and gives
the candidate tensors that view it. Whatever the candidate does, the judge's verdict rests only on
bytes it copies out of the arena itself and on its own pristine copies of the inputs.

- CPU: a ``memfd`` (anonymous shared memory), ``mmap``-ed by both processes.
- CUDA: physical device memory from the driver's virtual-memory API (``cuMemCreate`` with a POSIX
  file-descriptor handle), mapped into each process's own address space. The legacy CUDA IPC that
  ``torch.multiprocessing`` uses (``cudaIpcGetMemHandle``) refuses a process of another uid or pid
  namespace on the H200 ("mapping of buffer object failed", scripts/probe_sandbox.py, 2026-12-01), and
  the runner runs as another uid; a descriptor is a capability the kernel checks by possession.

An arena is one flat byte buffer; tensors are slices of it (:class:`Slot`, each aligned to 256 bytes,
what CUDA guarantees of cudaMalloc and vectorized kernels assume).
"""

from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass
from functools import cache

import torch

ALIGN = 256

_DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2, "int64": torch.int64,
    "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_of(name: str) -> torch.dtype:
    return _DTYPES[name]


@dataclass(frozen=True)
class Slot:
    """One tensor inside an arena: contiguous, at ``offset`` bytes."""

    offset: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * torch.empty((), dtype=dtype_of(self.dtype)).element_size()

    def to_json(self) -> list:
        return [self.offset, list(self.shape), self.dtype]

    @staticmethod
    def from_json(x: list) -> Slot:
        return Slot(int(x[0]), tuple(int(s) for s in x[1]), str(x[2]))


def layout(specs: list[tuple[tuple[int, ...], str]]) -> tuple[list[Slot], int]:
    """Slots for tensors of these (shape, dtype), packed and aligned; and the arena size."""
    slots, off = [], 0
    for shape, dtype in specs:
        s = Slot(off, tuple(shape), dtype)
        slots.append(s)
        off += (s.nbytes + ALIGN - 1) // ALIGN * ALIGN
    return slots, max(off, ALIGN)


class Arena:
    """A shared byte buffer and tensor views of it. ``fd`` is what the other process needs."""

    device: str
    fd: int
    size: int

    def view(self, slot: Slot) -> torch.Tensor:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class CpuArena(Arena):
    def __init__(self, size: int, fd: int | None = None):
        self.device, self.size = "cpu", size
        if fd is None:
            fd = os.memfd_create("kc-arena", os.MFD_CLOEXEC)
            os.ftruncate(fd, size)
        self.fd = fd
        self._map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._bytes = torch.frombuffer(self._map, dtype=torch.uint8)

    def view(self, slot: Slot) -> torch.Tensor:
        raw = self._bytes[slot.offset: slot.offset + slot.nbytes]
        return raw.view(dtype_of(slot.dtype)).view(slot.shape)

    def close(self) -> None:
        self._bytes = None
        try:
            self._map.close()
        except BufferError:
            pass  # a view is still alive; the mapping goes with the process
        os.close(self.fd)


# -- CUDA: the driver's virtual-memory management API, through ctypes --------------------------------

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class CudaError(RuntimeError):
    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        self.code = code


CUDA_ERROR_OUT_OF_MEMORY = 2


@cache
def _cuda() -> ctypes.CDLL:
    lib = ctypes.CDLL("libcuda.so.1")
    for name in ("cuMemCreate", "cuMemRelease", "cuMemExportToShareableHandle", "cuMemImportFromShareableHandle",
                 "cuMemAddressReserve", "cuMemAddressFree", "cuMemMap", "cuMemUnmap", "cuMemSetAccess",
                 "cuMemGetAllocationGranularity", "cuCtxGetCurrent", "cuCtxGetDevice"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


def _check(code: int, what: str) -> None:
    if code != 0:
        name = " (out of memory)" if code == CUDA_ERROR_OUT_OF_MEMORY else ""
        raise CudaError(f"{what} failed with CUresult {code}{name}", code)


def _current_device() -> int:
    """The device of the CUDA context torch made current on this thread (created if need be)."""
    torch.cuda.init()
    torch.empty(0, device="cuda")  # makes the primary context current on this thread
    ctx = ctypes.c_void_p()
    _check(_cuda().cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if not ctx.value:
        raise CudaError("no current CUDA context on this thread")
    dev = ctypes.c_int()
    _check(_cuda().cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
    return dev.value


class _CudaArrayInterface:
    """A raw device pointer as something torch.as_tensor can view (uint8, one dimension)."""

    def __init__(self, ptr: int, size: int):
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None}


class CudaArena(Arena):
    """Device memory shared by file descriptor. Created by the judge (``fd=None``) or imported by
    the runner from the descriptor it received."""

    def __init__(self, size: int, fd: int | None = None):
        lib = _cuda()
        self.device = "cuda"
        dev = _current_device()
        prop = _Prop()
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        prop.location = _Location(CU_MEM_LOCATION_TYPE_DEVICE, dev)
        gran = ctypes.c_size_t()
        _check(lib.cuMemGetAllocationGranularity(ctypes.byref(gran), ctypes.byref(prop),
                                                 CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity")
        self.size = (size + gran.value - 1) // gran.value * gran.value
        self._handle = ctypes.c_ulonglong()
        if fd is None:
            _check(lib.cuMemCreate(ctypes.byref(self._handle), ctypes.c_size_t(self.size), ctypes.byref(prop),
                                   ctypes.c_ulonglong(0)), "cuMemCreate")
            out = ctypes.c_int(-1)
            _check(lib.cuMemExportToShareableHandle(ctypes.byref(out), self._handle,
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, ctypes.c_ulonglong(0)),
                   "cuMemExportToShareableHandle")
            fd = out.value
        else:
            _check(lib.cuMemImportFromShareableHandle(ctypes.byref(self._handle), ctypes.c_void_p(fd),
                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                   "cuMemImportFromShareableHandle")
        self.fd = fd
        self._ptr = ctypes.c_ulonglong()
        _check(lib.cuMemAddressReserve(ctypes.byref(self._ptr), ctypes.c_size_t(self.size), ctypes.c_size_t(0),
                                       ctypes.c_ulonglong(0), ctypes.c_ulonglong(0)), "cuMemAddressReserve")
        _check(lib.cuMemMap(self._ptr, ctypes.c_size_t(self.size), ctypes.c_size_t(0), self._handle,
                            ctypes.c_ulonglong(0)), "cuMemMap")
        access = _Access(_Location(CU_MEM_LOCATION_TYPE_DEVICE, dev), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        _check(lib.cuMemSetAccess(self._ptr, ctypes.c_size_t(self.size), ctypes.byref(access), ctypes.c_size_t(1)),
               "cuMemSetAccess")
        self._bytes = torch.as_tensor(_CudaArrayInterface(self._ptr.value, self.size), device=f"cuda:{dev}")

    def view(self, slot: Slot) -> torch.Tensor:
        raw = self._bytes[slot.offset: slot.offset + slot.nbytes]
        return raw.view(dtype_of(slot.dtype)).view(slot.shape)

    def close(self) -> None:
        """Unmap once nothing runs on it (the caller synchronizes first)."""
        lib = _cuda()
        self._bytes = None
        lib.cuMemUnmap(self._ptr, ctypes.c_size_t(self.size))
        lib.cuMemAddressFree(self._ptr, ctypes.c_size_t(self.size))
        lib.cuMemRelease(self._handle)
        try:
            os.close(self.fd)
        except OSError:
            pass


def new_arena(device: str, size: int) -> Arena:
    """A fresh arena. On a GPU the judge's reference has usually just run: what torch's caching
    allocator keeps from it is free to torch but not to cuMemCreate, so an out-of-memory there gives
    the cache back and tries once more (measured on the H200: a 4097-sequence KDA-flush holdout,
    ~5 GB of arena, failed with CUresult 2 behind the reference's cached blocks)."""
    if not device.startswith("cuda"):
        return CpuArena(size)
    try:
        return CudaArena(size)
    except CudaError as e:
        if e.code != CUDA_ERROR_OUT_OF_MEMORY:
            raise
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        return CudaArena(size)


def open_arena(device: str, size: int, fd: int) -> Arena:
    return CudaArena(size, fd) if device.startswith("cuda") else CpuArena(size, fd)
