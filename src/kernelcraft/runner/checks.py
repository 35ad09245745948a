"""Instruments the runner puts around a candidate's calls. What they find is *evidence* the judge
weighs, never a verdict: they run in the candidate's own process, so a candidate can blind them
(then nothing is reported) but cannot make a wrong answer right, which the judge decides on its own
copies of the inputs and the outputs. A finding they do report can only count against the candidate.

- the op audit: a torch dispatch mode recording every op the call issues, by qualified name
  (``aten::add``, ``myns::op``): the judge decides which are allowed, by its contract;
- whether that dispatch mode was still installed after the call (a candidate that pops it is seen);
- Triton launches counted (a ``python`` solution must launch a kernel);
- Python and native thread counts around the call;
- outputs: plain tensors, not aliasing an input or each other;
- a snapshot of every callable of torch and of this harness's runner modules, taken before the
  candidate is imported, compared after the import and after each call (``[harness-tamper]``).

Before each call on CUDA, blocks of each output's size are allocated, filled with NaN and freed, so an
output the candidate allocates and never writes reads NaN rather than something left there.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# aten ops a kernel's Python wrapper may call: allocation, views, metadata. Nothing that computes.
ALLOWED_OPS = frozenset(f"aten::{n}" for n in (
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "zero_", "view", "_unsafe_view", "reshape", "as_strided", "slice", "select", "t",
    "transpose", "permute", "expand", "unsqueeze", "squeeze", "unbind", "split", "split_with_sizes",
    "chunk", "narrow", "alias", "detach", "lift_fresh", "view_as", "flatten", "unflatten",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "resolve_conj",
    "resolve_neg", "_reshape_alias", "set_", "record_stream", "view_as_real", "view_as_complex",
    "_conj", "conj", "contiguous",
))

# Ops of other libraries' namespaces that only answer a version or capability question: importing liger-kernel
# pulls in torchvision and torchaudio, whose import-time checks call them (session 19: an A/A candidate made of
# Liger's peer code was REJECTED [torch-compute] for these alone). Not recorded when a call takes and returns no
# tensor; a candidate that registers an op of the same name with a tensor in its signature is recorded as usual.
QUERY_OPS = frozenset(("torchvision::_cuda_version", "_torchaudio::cuda_version", "_torchaudio::is_align_available"))
_native_query: dict[str, bool] = {}


def native_query_op(name: str) -> bool:
    """A QUERY_OPS name whose schema and kernels were all registered from compiled code (torchvision's and
    torchaudio's are C++). One defined from Python (``torch.library.custom_op("torchvision::_cuda_version")``
    where torchvision is not installed) is a candidate's op under a trusted name: its body ran torch compute
    the audit never saw (red team round 4, session 32). Python registrations name their ``.py`` file in the
    dispatcher's dump; a fake (Meta) kernel may be Python's."""
    if name not in _native_query:
        try:
            dump = torch._C._dispatch_dump(name)
        except Exception:  # noqa: BLE001 - not registered, or the dump moved: not exempt
            dump = None
        native = bool(dump) and ": registered at " in dump
        for line in (dump or "").splitlines():
            key, sep, rest = line.partition(": registered at ")
            if sep and key.strip() != "Meta" and ".py:" in rest.split(" :: ")[0]:
                native = False
        _native_query[name] = native
    return _native_query[name]


def _holds_tensor(x: Any) -> bool:
    if isinstance(x, torch.Tensor):
        return True
    if isinstance(x, (list, tuple)):
        return any(_holds_tensor(v) for v in x)
    if isinstance(x, dict):
        return any(_holds_tensor(v) for v in x.values())
    return False


launches = {"triton": 0}  # kernel launches seen by the hooks below, since the last reset


class OpAudit(TorchDispatchMode):
    """Records every op that reaches the dispatcher while active (Python and C++ callers alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = f"{func.namespace}::{func.overloadpacket.__name__}"
        if name in QUERY_OPS and native_query_op(name):
            out = func(*args, **(kwargs or {}))
            if _holds_tensor((args, kwargs, out)):
                self.ops[name] = self.ops.get(name, 0) + 1
            return out
        self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


def audit_installed() -> bool:
    """An OpAudit is still on the dispatch-mode stack (a candidate may pop or disable it)."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    try:
        return any(isinstance(m, OpAudit) for m in _get_current_dispatch_mode_stack())
    except Exception:  # noqa: BLE001 - torch internals moved: say so as a failed check
        return False


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
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def _watched() -> dict[str, object]:
    import builtins
    import time

    import torch.nn.functional

    from kernelcraft.measure import timing
    from kernelcraft.runner import checks, main, shared, wire

    watched: dict[str, object] = {
        "builtins": builtins, "time": time, "torch": torch, "torch.Tensor": torch.Tensor,
        "torch.TensorBase": torch._C.TensorBase, "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event,
        "torch.nn.functional": torch.nn.functional,
    }
    for mod in (checks, main, shared, wire, timing):
        watched[mod.__name__] = mod
        # and the methods of every class they define: replacing `_CpuClock.run` changes no module-level
        # identity (red team round 4, session 32: a clock divided its samples, promotable at 13.6x)
        for k, v in list(vars(mod).items()):
            if isinstance(v, type) and v.__module__ == mod.__name__:
                watched[f"{mod.__name__}.{k}"] = v
    watched["OpAudit"] = OpAudit
    watched["Runner"] = main.Runner
    return watched


class TamperSnapshot:
    """Identity of every callable the runner relies on, taken before candidate code is imported."""

    def __init__(self) -> None:
        self.watched = _watched()
        self.state = {name: self._state(name, obj) for name, obj in self.watched.items()}

    @classmethod
    def _state(cls, name: str, obj: object) -> dict[str, int]:
        # the runner's own modules: every global, data too (red team round 5, session 32: `enum.global_enum` rebound
        # main.PLAIN_VALUES and checks.launches to members that said yes to everything)
        if isinstance(obj, type(torch)) and name.startswith("kernelcraft."):
            return {k: id(v) for k, v in list(vars(obj).items())}
        return cls._callables(obj)

    @staticmethod
    def _callables(obj: object) -> dict[str, int]:
        return {k: id(v) for k, v in list(vars(obj).items())
                if (callable(v) or isinstance(v, staticmethod | classmethod | property)) and not isinstance(v, type(torch))}

    def changed(self) -> list[str]:
        found = []
        for name, obj in self.watched.items():
            before = self.state[name]
            now = self._state(name, obj)
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
        found = hooks_installed() + self.changed()
        if not found:
            return ""
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        return "[harness-tamper] the candidate patched what the harness relies on: " + "; ".join(found[:5]) + more


_refused_audit_hooks: list[str] = []  # what tried to add an audit hook after the runner's own
_refused_trace_hooks: list[str] = []  # sys.settrace / sys.setprofile calls after the runner closed the hooks
_monitoring_tools: set[int] | None = None  # sys.monitoring tool ids in use before the candidate's import
_hooks_closed = False  # close_interpreter_hooks ran in this process (a candidate's runner)


def close_interpreter_hooks() -> None:
    """Before a candidate is imported: no audit hook can be added after the runner's own, and the cyclic
    garbage collector runs only where the harness calls it (never). Red team round 4, session 32: an audit
    hook (``sys.addaudithook``) ran the kernel on the audit event the clock itself raises right after it
    reads its end time, and a suspended generator's ``finally``, left in a reference cycle, ran it from the
    collection a counted number of allocations after the timed call returned: PASSED at 40x and 8x their real
    speed with the static gate on. A collection can come at any allocation, so between the judge's refill
    of the inputs and the end of its read of the outputs there is no safe moment for one; a runner lives for
    one solution's evaluation, and what cycles it leaks go with it. Also records the ``sys.monitoring``
    tools in use (Python 3.12), so that one a candidate registers is seen (``hooks_installed``)."""
    global _monitoring_tools, _hooks_closed

    def refuse(event: str, args: tuple) -> None:
        if event == "sys.addaudithook":
            _refused_audit_hooks.append(event)
            raise RuntimeError("the runner refuses audit hooks")  # CPython: the new hook is not added
        if event in ("sys.settrace", "sys.setprofile"):
            # red team round 9, session 33: a trace hook set in a timed call (through a `match` class pattern
            # past the gate) rewrote the clock's start time in the runner's own frame on the line event after
            # the call returned: a forged CPU time, PASSED. CPython raises these events before it installs the
            # hook and installs none when a hook raises; the runner itself never sets one (timing.py clears a
            # hook only where one is set, which this refusal makes impossible from Python).
            _refused_trace_hooks.append(event)
            raise RuntimeError("the runner refuses trace and profile hooks")

    sys.addaudithook(refuse)
    gc.disable()
    mon = getattr(sys, "monitoring", None)
    _monitoring_tools = {t for t in range(6) if mon.get_tool(t) is not None} if mon is not None else set()
    _hooks_closed = True


def hooks_installed() -> list[str]:
    """What would run candidate code inside the harness's own steps (reading outputs after the timer,
    `collect`): a torch function or dispatch mode left on its stack (outside the audit's own), a trace or
    profile hook. Red team, session 31: a TorchFunctionMode entered at import ran the kernel when the
    harness first touched the returned (plain, empty) tensor, after the timer; a self-removing trace hook
    did the same in `collect`. The static gate refuses the means; this is the runtime's look."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    found = []
    try:
        n = torch._C._len_torch_function_stack()
    except Exception:  # noqa: BLE001 - torch internals moved: not checked
        n = 0
    if n:
        found.append(f"{n} torch function mode(s) left installed")
    try:
        modes = [m for m in _get_current_dispatch_mode_stack() if not isinstance(m, OpAudit)]
    except Exception:  # noqa: BLE001
        modes = []
    if modes:
        found.append(f"dispatch mode(s) left installed: {', '.join(type(m).__name__ for m in modes[:3])}")
    if sys.gettrace() is not None or getattr(threading, "_trace_hook", None) is not None:
        found.append("a trace hook installed")
    if sys.getprofile() is not None or getattr(threading, "_profile_hook", None) is not None:
        found.append("a profile hook installed")
    if _refused_audit_hooks:
        found.append(f"{len(_refused_audit_hooks)} audit hook(s) refused")
    if _refused_trace_hooks:
        found.append(f"{len(_refused_trace_hooks)} trace/profile hook(s) refused ({', '.join(sorted(set(_refused_trace_hooks)))})")
    mon = getattr(sys, "monitoring", None)
    if mon is not None and _monitoring_tools is not None:
        new = [t for t in range(6) if t not in _monitoring_tools and mon.get_tool(t) is not None]
        if new:
            found.append(f"sys.monitoring tool(s) registered: {', '.join(str(mon.get_tool(t)) for t in new)}")
    if _hooks_closed and gc.isenabled():
        found.append("the garbage collector re-enabled")
    return found


def hooks_finding(when: str) -> str:
    """``hooks_installed`` as a finding, or ""."""
    hooks = hooks_installed()
    return f"[harness-tamper] {'; '.join(hooks)} {when}" if hooks else ""


class harness_reads:
    """The harness's own torch calls on what a candidate returned (shapes, storage, copies into the
    arena): no torch function or dispatch mode of anyone's intercepts them."""

    def __enter__(self):
        from torch.utils._python_dispatch import _disable_current_modes

        self._tf = torch._C.DisableTorchFunction()
        self._tf.__enter__()
        self._dm = _disable_current_modes()
        self._dm.__enter__()
        return self

    def __exit__(self, *exc):
        self._dm.__exit__(*exc)
        self._tf.__exit__(*exc)
        return False


def check_outputs(outputs: list[Any], output_names: list[str], inputs: list[Any], input_names: list[str]) -> str:
    spans = []
    for name, t in zip(input_names, inputs, strict=True):
        if isinstance(t, torch.Tensor) and t.numel():
            s = t.untyped_storage()
            spans.append((s.data_ptr(), s.nbytes(), f"input {name!r}"))
    for name, out in zip(output_names, outputs, strict=True):
        if type(out) is not torch.Tensor:  # plain tensors only by now (runner.main.not_plain)
            continue
        if not torch.Tensor.numel(out):
            continue
        s = torch.Tensor.untyped_storage(out)  # torch's own method, whatever the object says
        start, size = s.data_ptr(), s.nbytes()
        for other_start, other_size, what in spans:
            if start < other_start + other_size and other_start < start + size:
                return f"[output-aliasing] output {name!r} shares memory with {what}; outputs must be fresh tensors"
        spans.append((start, size, f"output {name!r}"))
    return ""


def hook_triton_launches(interpreted: bool) -> None:
    """Count Triton launches; on CPU also suspend the op audit for the interpreter's own aten copies
    of the arguments (to the host and back: not the candidate's compute), never for the kernel's body.
    Harness code, before the candidate is imported."""
    from torch.utils._python_dispatch import _disable_current_modes

    if interpreted:
        from triton.runtime import interpreter

        executor = interpreter.GridExecutor
        launch = executor.__call__
        if getattr(launch, "_kc_hooked", False):
            return
        copies = [n for n in ("_init_args_hst", "_restore_args_dev") if callable(getattr(executor, n, None))]
        if len(copies) == 2:
            # Only the interpreter's copies of the arguments to the host and back are not audited. The
            # kernel's body stays audited: under the interpreter it is plain Python and could call torch
            # (red team, session 31: the whole computation in torch, called from a @triton.jit body, hid
            # from an audit suspended for the whole launch). A GPU build refuses such a body anyway.
            for name in copies:
                def unaudited(self, *args, _copy=getattr(executor, name), **kwargs):
                    with _disable_current_modes():
                        return _copy(self, *args, **kwargs)

                setattr(executor, name, unaudited)

            def interpreted_launch(self, *args, **kwargs):
                launches["triton"] += 1
                return launch(self, *args, **kwargs)
        else:  # an interpreter without those two steps: the whole launch unaudited, as before

            def interpreted_launch(self, *args, **kwargs):
                launches["triton"] += 1
                with _disable_current_modes():
                    return launch(self, *args, **kwargs)

        interpreted_launch._kc_hooked = True
        executor.__call__ = interpreted_launch
        return
    from triton.runtime import jit

    run = jit.JITFunction.run
    if getattr(run, "_kc_hooked", False):
        return

    def counted_run(self, *args, **kwargs):
        launches["triton"] += 1
        return run(self, *args, **kwargs)

    counted_run._kc_hooked = True
    jit.JITFunction.run = counted_run
