"""The memory limit of a child process that runs a task's or a problem's own code (``task check``:
:mod:`kernelcraft.task.runcheck`; ``import kernelbench``: :mod:`kernelcraft.interop.kernelbench._isolate`).

``RLIMIT_DATA`` (heap and private writable mappings, where torch's CPU tensors live) turns an
allocation past the limit into an error inside that process (``MemoryError``, or torch's
``RuntimeError: ... can't allocate memory``) instead of the kernel's out-of-memory killer ending it,
or something else on the machine, with SIGKILL. Not ``RLIMIT_AS``: it also counts read-only file
mappings, and safetensors maps a weights file twice (its reader, then torch's storage), so a 4 GB
model failed to load under an 8 GB address-space limit with 1 GB in use.
"""

from __future__ import annotations

import os
import resource
import signal

# torch's CPU allocator under the limit; its CUDA allocator when the GPU is full
_OOM_WORDS = ("MemoryError", "can't allocate memory", "Cannot allocate memory", "OutOfMemoryError", "out of memory")


def limit_data(max_mb: int) -> None:
    """Cap this process's data at ``max_mb`` MB (0: no limit). Call it in the child: as a
    ``preexec_fn``, or before the code it guards allocates."""
    if max_mb > 0:
        resource.setrlimit(resource.RLIMIT_DATA, (max_mb << 20, max_mb << 20))


def half_of_ram_mb() -> int:
    """Half this machine's physical memory in MB (0 where it cannot be read: no limit). A check of
    the smallest workload that needs more than this belongs on a larger machine, and the other half
    keeps the parent and the rest of the machine out of the out-of-memory killer's way."""
    try:
        return (os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")) >> 21
    except (ValueError, OSError):
        return 0


def out_of_memory(text: str) -> bool:
    """Whether an exception's text (or a traceback) is an allocation that failed."""
    return any(w in text for w in _OOM_WORDS)


def signal_name(returncode: int) -> str:
    """``"signal 9 (SIGKILL)"`` for a child that ``subprocess`` reports as ``-9``."""
    try:
        return f"signal {-returncode} ({signal.Signals(-returncode).name})"
    except ValueError:
        return f"signal {-returncode}"
