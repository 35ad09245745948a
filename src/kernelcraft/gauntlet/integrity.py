"""Integrity checks run around a candidate's call inside the worker (gate 5).

Each failed check names its class in brackets, so a verdict says which way of cheating it caught:

- ``[input-mutation]`` an input differs from its pristine copy after the call;
- ``[output-aliasing]`` an output shares storage with an input or with another output;
- ``[not-a-plain-tensor]`` an output is a tensor subclass (lazy or deferred values) rather than
  a plain tensor with its own storage;
- ``[torch-compute]`` the candidate called torch compute ops (matmul, add, softmax, a fallback to
  the reference or the baseline, ...) where a kernel was due; allocation, views and metadata are
  allowed, and ``contract.toml`` ``[integrity] allowed_torch_ops`` may allow more;
- ``[threads]`` the call left more Python threads running than before it;
- ``[nondeterminism]`` two runs on identical inputs disagree bit for bit (uninitialised memory,
  races, state kept between calls), compared in the checkers' canonical form (tied top-k entries
  may come in another order); ``[integrity] deterministic = false`` relaxes it for tasks where
  atomics make bitwise repeatability impossible: the second run must then pass the checks again.
- ``[harness-tamper]`` a function or class the harness relies on (torch, time, builtins, the
  worker's pipe, kernelcraft's own modules) was replaced: :class:`TamperSnapshot` records the
  identity of every callable attribute of those namespaces before the candidate is imported and
  compares after the import and after every call.

Before each candidate call on a CUDA device, blocks of each output's size are allocated, filled
with NaN and freed, so an output allocated by the candidate and never written reads NaN (the
poison) rather than whatever a previous computation left there.
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# aten ops a kernel's Python wrapper may call: allocation, views, metadata. Nothing that computes.
ALLOWED_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "zero_", "view", "_unsafe_view", "reshape", "as_strided", "slice", "select", "t",
    "transpose", "permute", "expand", "unsqueeze", "squeeze", "unbind", "split", "split_with_sizes",
    "chunk", "narrow", "alias", "detach", "lift_fresh", "view_as", "flatten", "unflatten",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "resolve_conj",
    "resolve_neg", "_reshape_alias", "set_", "record_stream",
})


class OpAudit(TorchDispatchMode):
    """Records every aten op that reaches the dispatcher while active (Python and C++ callers alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))

    def forbidden(self, allowed_extra: set[str]) -> dict[str, int]:
        return {n: c for n, c in self.ops.items() if n not in ALLOWED_OPS and n not in allowed_extra}


def prime_dispatch_modes() -> None:
    """Enter a dispatch mode once. The first one imports torch._dynamo, which replaces
    torch.manual_seed and friends with wrapped versions: done before a TamperSnapshot, so the
    snapshot holds the wrapped functions rather than flagging torch's own lazy patching."""
    with OpAudit():
        torch.empty(0)


def poison_allocator(shapes_dtypes: list[tuple[tuple[int, ...], torch.dtype]], device: str) -> None:
    if not device.startswith("cuda"):
        return  # CPU allocations come from malloc/mmap; there is no cache to seed
    blocks = []
    for shape, dtype in shapes_dtypes:
        for _ in range(2):
            t = torch.empty(shape, dtype=dtype, device=device)
            if dtype.is_floating_point:
                t.fill_(float("nan"))
            else:
                t.fill_(-1 if dtype != torch.bool else True)
            blocks.append(t)
    del blocks  # back to the caching allocator, poisoned


def python_threads() -> int:
    return threading.active_count()


def native_threads() -> int:
    """Threads of this process as the kernel sees them (C++ threads included); -1 where unknown."""
    import os

    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def _watched() -> dict[str, object]:
    import builtins
    import multiprocessing.connection
    import time

    import torch.nn.functional

    from kernelcraft.gauntlet import checkers, compare, integrity, runner
    from kernelcraft.measure import timing
    from kernelcraft.task import inputs

    watched: dict[str, object] = {
        "builtins": builtins, "time": time, "torch": torch, "torch.Tensor": torch.Tensor,
        "torch.TensorBase": torch._C.TensorBase, "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event,
        "torch.nn.functional": torch.nn.functional, "torch.testing": torch.testing,
        "Connection": multiprocessing.connection.Connection,
    }
    for mod in (compare, checkers, integrity, runner, timing, inputs):
        watched[mod.__name__] = mod
    watched["Runner"] = runner.Runner
    watched["OpAudit"] = OpAudit
    return watched


class TamperSnapshot:
    """Identity of every callable the harness relies on, taken before candidate code is imported."""

    def __init__(self) -> None:
        self.watched = _watched()
        self.state = {name: self._callables(obj) for name, obj in self.watched.items()}

    @staticmethod
    def _callables(obj: object) -> dict[str, int]:
        return {k: id(v) for k, v in list(vars(obj).items()) if callable(v) and not isinstance(v, type(torch))}

    def changed(self) -> list[str]:
        found = []
        for name, obj in self.watched.items():
            before = self.state[name]
            now = self._callables(obj)
            is_class = isinstance(obj, type)
            for k, ident in now.items():
                if k in before and before[k] != ident:
                    found.append(f"{name}.{k} was replaced")
                elif k not in before and is_class:
                    found.append(f"{name}.{k} was added")
            for k in before.keys() - now.keys():
                found.append(f"{name}.{k} was deleted")
        return found

    def reason(self) -> str:
        found = self.changed()
        if not found:
            return ""
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        return ("[harness-tamper] the candidate patched what the harness relies on: " + "; ".join(found[:5]) + more)


def check_outputs(outputs: list[Any], output_names: list[str], inputs: list[Any], input_names: list[str]) -> str:
    spans = []
    for name, t in zip(input_names, inputs, strict=True):
        if isinstance(t, torch.Tensor) and t.numel():
            s = t.untyped_storage()
            spans.append((s.data_ptr(), s.nbytes(), f"input {name!r}"))
    for name, out in zip(output_names, outputs, strict=True):
        if not isinstance(out, torch.Tensor):
            continue
        if type(out) is not torch.Tensor:
            return (f"[not-a-plain-tensor] output {name!r} is a {type(out).__module__}.{type(out).__name__}; "
                    "outputs must be plain torch.Tensor objects holding their values")
        if not out.numel():
            continue
        s = out.untyped_storage()
        start, size = s.data_ptr(), s.nbytes()
        for other_start, other_size, what in spans:
            if start < other_start + other_size and other_start < start + size:
                return f"[output-aliasing] output {name!r} shares memory with {what}; outputs must be fresh tensors"
        spans.append((start, size, f"output {name!r}"))
    return ""


def bitwise_equal(a: Any, b: Any) -> tuple[bool, int]:
    """Bit-for-bit equality (NaNs with the same bits compare equal); returns (equal, differing elements)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return (a == b) or (a != a and b != b), 0 if a == b else 1
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, max(a.numel(), b.numel())
    if a.dtype == torch.bool:
        diff = a != b
    else:
        view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        diff = a.contiguous().view(view) != b.contiguous().view(view)
    n = int(diff.sum())
    return n == 0, n


def exempt_triton_interpreter() -> None:
    """On CPU, Triton's interpreter moves tensors to numpy and back with aten copies; those copies
    are the interpreter's, not the candidate's compute. The worker (trusted code, before any
    candidate is imported) wraps the interpreter's kernel launch so the op audit is suspended for
    exactly the duration of a launch. On a GPU a Triton launch issues no aten op at all."""
    from torch.utils._python_dispatch import _disable_current_modes
    from triton.runtime import interpreter

    launch = interpreter.GridExecutor.__call__
    if getattr(launch, "_kc_exempt", False):
        return

    def audited_launch(self, *args, **kwargs):
        with _disable_current_modes():
            return launch(self, *args, **kwargs)

    audited_launch._kc_exempt = True
    interpreter.GridExecutor.__call__ = audited_launch
