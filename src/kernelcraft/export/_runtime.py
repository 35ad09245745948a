"""Runtime of an exported kernel: copied verbatim into every package ``kernelcraft export`` writes.

It imports nothing but torch (and, lazily, triton or torch's extension builder for the kernel
itself), so the package works where kernelcraft is not installed. Next to it in the package:

- ``kernelcraft_export.json``: the op's name and schema, the definition, the validated envelope
  (device, hardware, dtypes, shapes), the solution's identity and the export's provenance;
- ``evaluation.json``: the gauntlet's record for this exact source;
- ``_reference.py``: the definition's reference ``run``, the fallback;
- ``_solution/``: the kernel's sources, as evaluated.

The op is a ``torch.library`` custom op whose fake implementation is the reference run on fake
tensors (so shapes and dtypes under ``torch.compile`` are exactly what the real call returns, on
any path), with the definition's axes as the fallback when the reference cannot run on fake
tensors. A call runs the kernel only inside the validated envelope; anything else runs the
reference, and the first call of each kind of miss says why, once, in the log.

An eager call is on the host's critical path at decode sizes, so its per-call work is kept small: the
envelope check runs once per (shapes, dtypes, devices, contiguity) of the tensor arguments and its
verdict is looked up afterwards (``_checked``); the kernel is loaded once (the lock is taken only
then); the log is written only on the first miss of a kind. An eager call of ``op`` on plain tensors
whose key was already found inside the envelope runs the kernel without torch's dispatcher (7-13 us
of the 16-38 us per call the package used to add on the 2-core CPU machine,
results/cpu/export_call_overhead.json). ``op`` stays the registered ``CustomOpDef`` (``torch.ops``,
``opcheck`` and ``torch.compile`` see what they saw before; traced, it is the dispatcher's call), and
every call the dispatcher could treat differently takes the dispatcher: under torch.compile, a
dispatch or function mode, functorch, the JIT tracer or the profiler; with keyword arguments, tensor
subclasses, inputs that record gradients, scalars not of the schema's Python type; and arguments not
checked yet or outside the envelope.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
import threading
from pathlib import Path

import torch

_TORCH_DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float8_e4m3fn": getattr(torch, "float8_e4m3fn", None), "float8_e5m2": getattr(torch, "float8_e5m2", None),
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool,
}


def _scalar_type(dtype: str) -> str:
    if dtype == "bool":
        return "bool"
    return "int" if dtype.startswith(("int", "uint")) else "float"


def schema(definition: dict) -> str:
    """The custom op's schema from a FlashInfer-Trace definition: inputs in order, outputs in order."""
    args = []
    for name, spec in definition["inputs"].items():
        args.append(f"{'Tensor' if spec['shape'] is not None else _scalar_type(spec['dtype'])} {name}")
    n_out = len(definition["outputs"])
    ret = "Tensor" if n_out == 1 else "(" + ", ".join(["Tensor"] * n_out) + ")"
    return f"({', '.join(args)}) -> {ret}"


class ExportedOp:
    direct_calls = True  # eager in-envelope calls of ``op`` skip the dispatcher (False: always through it)

    def __init__(self, package_dir: Path, module_name: str):
        self.dir = Path(package_dir)
        self.module_name = module_name
        self.meta = json.loads((self.dir / "kernelcraft_export.json").read_text())
        self.definition = self.meta["definition"]
        self.validated = self.meta["envelope"]
        self.solution = self.meta["solution"]
        self.qualname = f"{self.meta['namespace']}::{self.meta['op_name']}"
        self.log = logging.getLogger(module_name)
        self._inputs = list(self.definition["inputs"].items())
        self._outputs = list(self.definition["outputs"].items())
        self._out_dtypes = [_TORCH_DTYPES.get(spec["dtype"]) for _, spec in self._outputs]
        self._lock = threading.Lock()
        self._kernel = None
        self._kernel_error: str | None = None
        self._warned: set[str] = set()
        self._device_misses: dict = {}
        # the envelope's verdict per key of the tensor arguments (see _key); bounded: past _MAX_KEYS
        # new keys are checked on every call instead of remembered
        self._checked: dict = {}
        self._tensor_pos = tuple(i for i, (_, spec) in enumerate(self._inputs) if spec["shape"] is not None)
        self._dps = bool(self.solution.get("destination_passing_style"))
        self.reset_stats()
        if self.solution["language"] == "triton" and self.validated["device_type"] == "cpu":
            # Validated through the Triton interpreter, which triton reads when it is first imported.
            if "triton" not in sys.modules:
                os.environ.setdefault("TRITON_INTERPRET", "1")
        self.reference = importlib.import_module(f"{module_name}._reference").run
        self._arg_types = tuple(None if spec["shape"] is not None else _SCALARS[_scalar_type(spec["dtype"])]
                                for _, spec in self._inputs)
        self.op = self._register()
        if _EagerOpDef is not None and type(self.op) is _CustomOpDef and _PROBES is not None:
            self.op.__class__ = _EagerOpDef  # the same object, with the direct eager call (see the module doc)
            self.op._kc_exported = self

    # -- registration ------------------------------------------------------------------------------
    def _register(self):
        try:
            from torch._library.custom_ops import OPDEFS

            existing = OPDEFS.get(self.qualname)
        except ImportError:  # a torch without the registry: register and let torch complain on a clash
            existing = None
        if existing is not None:  # the same package imported twice: one op per process
            return existing
        if self.traceable_triton():
            return self._register_triton_op()
        op = torch.library.custom_op(self.qualname, self._impl, mutates_args=(), schema=schema(self.definition))
        op.register_fake(self._fake)
        return op

    def traceable_triton(self) -> bool:
        """A Triton kernel is registered with ``torch.library.triton_op``: under torch.compile the op
        decomposes into its kernel launches (``triton_kernel_wrapper_functional``), so Inductor sees and
        schedules the kernel instead of calling an opaque op. Not under the Triton interpreter, whose
        kernels cannot be traced (``wrap_triton`` hands them back unwrapped: torch/_library/triton.py)."""
        return (self.solution["language"] == "triton" and os.environ.get("TRITON_INTERPRET") != "1"
                and hasattr(torch.library, "triton_op"))

    def _register_triton_op(self):
        import inspect

        scalar = {"float": float, "int": int, "bool": bool}
        params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    annotation=torch.Tensor if spec["shape"] is not None else scalar[_scalar_type(spec["dtype"])])
                  for n, spec in self._inputs]
        n_out = len(self._outputs)
        ret = torch.Tensor if n_out == 1 else tuple[(torch.Tensor,) * n_out]

        sig = inspect.Signature(params, return_annotation=ret)
        n_in = len(params)

        def fn(*args, **kwargs):
            if kwargs or len(args) != n_in:
                args = sig.bind(*args, **kwargs).args
            traced = _traced_types()
            for a in args:
                if isinstance(a, traced):
                    saved = json.loads(json.dumps(self.counts))  # a trace is no call: keep the counts
                    try:
                        with _traceable_launches():
                            return self._run(args, self.check(args))  # symbolic sizes: never the cache
                    finally:
                        self.counts = saved
            return self._impl(*args)

        fn.__signature__ = sig
        fn.__name__ = self.meta["op_name"]
        return torch.library.triton_op(self.qualname, fn, mutates_args=())

    # -- the two implementations ---------------------------------------------------------------------
    def _impl(self, *args):
        """The op on real tensors (the dispatcher's backend kernel)."""
        return self._run(args, self._check_cached(args))

    def _run(self, args, verdict):
        """The kernel when ``verdict`` (the envelope check's) is None and the kernel loads, else the
        reference, counted and, on the first miss of its kind, logged."""
        if verdict is None:
            kernel = self._kernel
            if kernel is None:
                kernel = self._load_kernel()
            if kernel is not None:
                outs = self._call_kernel(kernel, args)
                self.counts["kernel"] += 1
                return self._finish(outs, args)
            verdict = ("kernel-unavailable", self._kernel_error or "the kernel could not be loaded")
        self._note_fallback(*verdict)
        return self._finish(self._as_declared(self.reference(*args), args), args)

    def _fake(self, *args):
        try:
            outs = self._as_declared(self.reference(*args), args)
        except Exception:  # noqa: BLE001 - a reference that cannot run on fake tensors: use the definition
            axes = self._bind_axes(args)
            dev = next(a.device for a in args if isinstance(a, torch.Tensor))
            outs = tuple(torch.empty([axes[n] if isinstance(n, str) else n for n in spec["shape"]],
                                     dtype=_TORCH_DTYPES[spec["dtype"]], device=dev) for _, spec in self._outputs)
        return self._finish(outs, args)

    @staticmethod
    def _fresh(o, args):
        # A custom op returns fresh, contiguous tensors on every path, so the fake's strides hold.
        if o._base is not None:
            return o.clone().contiguous()
        for a in args:
            if o is a:
                return o.clone().contiguous()
        return o.contiguous()

    def _finish(self, outs, args):
        if not isinstance(outs, tuple | list):
            return self._fresh(outs, args)
        fixed = tuple(self._fresh(o, args) for o in outs)
        return fixed[0] if len(fixed) == 1 else fixed

    def _as_declared(self, outs, args):
        """The reference's outputs in the definition's dtypes when the call has the definition's input
        dtypes: a reference that computes in float32 or float64 (the GDN tasks') must not make the fake,
        or a fallback call, disagree with the kernel (validated to return those dtypes). Called with other
        dtypes, the reference's own dtypes stand."""
        single = not isinstance(outs, tuple | list)
        seq = [outs] if single else list(outs)
        pairs = list(zip(seq, self._out_dtypes, strict=False))
        if not any(isinstance(o, torch.Tensor) and w is not None and o.dtype is not w for o, w in pairs):
            return outs
        if not all(not isinstance(a, torch.Tensor) or spec["shape"] is None or a.dtype is _TORCH_DTYPES.get(spec["dtype"])
                   for a, (_, spec) in zip(args, self._inputs, strict=False)):
            return outs
        seq = [o.to(w) if isinstance(o, torch.Tensor) and w is not None and o.dtype is not w else o for o, w in pairs]
        return seq[0] if single else tuple(seq)

    # -- the envelope --------------------------------------------------------------------------------
    def _bind_axes(self, args) -> dict:
        axes: dict = dict(self.validated["const_axes"])
        for (_, spec), a in zip(self._inputs, args, strict=True):
            if spec["shape"] is None or not isinstance(a, torch.Tensor):
                continue
            for ax, size in zip(spec["shape"], a.shape, strict=False):
                axes.setdefault(ax, size)
        return axes

    def _key(self, args) -> tuple:
        """What the envelope check reads of the tensor arguments: sizes, dtype, device, contiguity."""
        return tuple([(a.shape, a.dtype, a.device, a.is_contiguous()) for a in map(args.__getitem__, self._tensor_pos)])

    def _direct(self, args) -> bool:
        """An eager call the dispatcher would hand to ``_impl`` unchanged, with arguments already found
        inside the envelope: ``op`` may run the kernel itself."""
        _, dispatch_modes, function_modes, jit_tracing, functorch, profiling, grad_enabled = _PROBES
        if (len(args) != len(self._arg_types) or dispatch_modes() or function_modes() or jit_tracing() is not None
                or functorch() is not None or profiling()):
            return False
        grad = grad_enabled()
        for a, want in zip(args, self._arg_types, strict=True):
            if want is None:
                t = type(a)
                if (t is not _Tensor and t is not _Parameter) or (grad and a.requires_grad):
                    return False
            elif type(a) is not want:
                return False
        try:
            return self._checked[self._key(args)] is None
        except Exception:  # noqa: BLE001 - not checked yet (KeyError) or not hashable: the dispatcher's call
            return False

    def _check_cached(self, args) -> tuple[str, str] | None:
        """``check(args)``, computed once per key of the arguments."""
        try:
            key = self._key(args)
            return self._checked[key]
        except KeyError:
            pass
        except (TypeError, AttributeError, IndexError):  # not tensors, or sizes that cannot be hashed
            return self.check(args)
        verdict = self.check(args)
        if len(self._checked) < _MAX_KEYS:
            self._checked[key] = verdict
        return verdict

    def check(self, args) -> tuple[str, str] | None:
        """None when the kernel was validated for these arguments, else (kind, why)."""
        v = self.validated
        tensors = [(name, a) for (name, spec), a in zip(self._inputs, args, strict=True) if spec["shape"] is not None]
        devices = {a.device for _, a in tensors}
        if len(devices) != 1:
            return "device", f"inputs on several devices {sorted(map(str, devices))}"
        dev = next(iter(devices))
        if dev.type != v["device_type"]:
            return "device", f"inputs on {dev.type}; the kernel was validated on {v['device_type']} only"
        if dev.type == "cuda":
            miss = self._device_misses.get(dev.index)
            if miss is None:  # asked once per device: it does not change while the process lives
                miss = self._device_misses[dev.index] = self._check_cuda_device(dev)
            if miss:
                return miss
        axes: dict[str, int] = {}
        specs = dict(self._inputs)
        for name, a in tensors:
            want = v["dtypes"][name]
            if str(a.dtype).removeprefix("torch.") != want:
                return "dtype", f"{name} is {str(a.dtype).removeprefix('torch.')}; validated for {want} only"
            shape = specs[name]["shape"]
            if a.dim() != len(shape):
                return "shape", f"{name} has {a.dim()} dims; the definition gives {len(shape)} ({shape})"
            if not a.is_contiguous():
                return "layout", f"{name} is not contiguous; only contiguous inputs were validated"
            for ax, size in zip(shape, a.shape, strict=True):
                if axes.setdefault(ax, size) != size:
                    return "shape", f"axis {ax} is {axes[ax]} in one input and {size} in {name}"
        for ax, size in axes.items():
            if ax in v["const_axes"]:
                if size != v["const_axes"][ax]:
                    return "shape", f"{ax}={size}; the definition fixes {ax}={v['const_axes'][ax]}"
                continue
            r = v["var_axes"].get(ax)
            if r is None:
                return "shape", f"axis {ax} was never run"
            if self.meta.get("exact_shapes"):
                if size not in r["values"]:
                    return "shape", f"{ax}={size} is not one of the validated values {r['values']}"
            elif not r["min"] <= size <= r["max"]:
                return "shape", f"{ax}={size} outside the validated range [{r['min']}, {r['max']}]"
        return None

    def _check_cuda_device(self, dev) -> tuple[str, str] | tuple[()]:
        v = self.validated
        name = torch.cuda.get_device_name(dev)
        if v.get("hardware") and name != v["hardware"]:
            return "hardware", f"device {name!r}; the kernel was validated on {v['hardware']!r} only"
        cc = "{}.{}".format(*torch.cuda.get_device_capability(dev))
        if v.get("compute_capability") and cc != v["compute_capability"]:
            return "hardware", f"compute capability {cc}; validated on {v['compute_capability']} only"
        return ()

    def _note_fallback(self, kind: str, why: str) -> None:
        self.counts["fallback"] += 1
        entry = self.counts["fallback_reasons"].setdefault(kind, {"count": 0, "first": why})
        entry["count"] += 1
        if kind not in self._warned:
            self._warned.add(kind)
            self.log.warning("%s: running the reference instead of %s: %s (said once per kind of miss)",
                             self.qualname, self.solution["name"], why)

    # -- the kernel ----------------------------------------------------------------------------------
    def _load_kernel(self):
        if self._kernel is not None or self._kernel_error is not None:
            return self._kernel
        with self._lock:
            if self._kernel is None and self._kernel_error is None:
                try:
                    self._kernel = self._build()
                except Exception as e:  # noqa: BLE001 - any failure to load means: use the reference
                    self._kernel_error = f"{type(e).__name__}: {str(e)[-2000:]}"
        return self._kernel

    def _build(self):
        lang = self.solution["language"]
        entry_file, symbol = self.solution["entry_point"].split("::")
        src = self.dir / "_solution"
        if lang in ("python", "triton"):
            if lang == "triton" and self.validated["device_type"] == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
                raise RuntimeError("validated on the CPU through the Triton interpreter, but triton was imported "
                                   "without TRITON_INTERPRET=1; set it before anything imports triton")
            mod = importlib.import_module(f"{self.module_name}._solution." + entry_file.removesuffix(".py").replace("/", "."))
            return getattr(mod, symbol)
        if lang in ("cuda", "cpp"):
            return self._build_extension(src, symbol)
        raise RuntimeError(f"no loader for language {lang!r}")

    def _build_extension(self, src: Path, symbol: str):
        from torch.utils.cpp_extension import load

        if not torch.cuda.is_available():
            raise RuntimeError("a CUDA extension needs a CUDA device")
        major, minor = torch.cuda.get_device_capability()
        os.environ["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"
        cache = Path(os.environ.get("KERNELCRAFT_EXPORT_CACHE", Path.home() / ".cache" / "kernelcraft-export"))
        build_dir = cache / f"{self.meta['namespace']}_sm{major}{minor}"
        build_dir.mkdir(parents=True, exist_ok=True)
        sources = sorted(str(p) for p in src.rglob("*") if p.suffix in (".cu", ".cpp", ".cc", ".cxx", ".c"))
        self.log.info("%s: building the CUDA extension for sm_%d%d in %s (once per machine)", self.qualname,
                      major, minor, build_dir)
        module = load(name=f"{self.meta['namespace']}_ext", sources=sources, extra_cflags=["-O3", "-std=c++17"],
                      extra_cuda_cflags=["-O3", "-std=c++17", "--expt-relaxed-constexpr"],
                      extra_include_paths=[str(src)], build_directory=str(build_dir), verbose=False)
        return getattr(module, symbol)

    def _call_kernel(self, kernel, args):
        if not self._dps:
            return kernel(*args)
        axes = self._bind_axes(args)
        dev = next(a.device for a in args if isinstance(a, torch.Tensor))
        outs = tuple(torch.empty([axes[n] for n in spec["shape"]], dtype=_TORCH_DTYPES[spec["dtype"]], device=dev)
                     for _, spec in self._outputs)
        kernel(*args, *outs)
        return outs

    # -- introspection -------------------------------------------------------------------------------
    def stats(self) -> dict:
        """Calls that ran the kernel, calls that ran the reference, and why (first message per kind)."""
        return json.loads(json.dumps(self.counts))

    def reset_stats(self) -> None:
        self.counts = {"kernel": 0, "fallback": 0, "fallback_reasons": {}}

    def kernel_error(self) -> str | None:
        return self._kernel_error


_MAX_KEYS = 4096  # remembered envelope verdicts per op
_SCALARS = {"float": float, "int": int, "bool": bool}
_Tensor, _Parameter = torch.Tensor, torch.nn.Parameter


def _probes():
    """What decides whether an eager call may skip the dispatcher (``ExportedOp._direct``); None on a
    torch without one of them: then every call takes the dispatcher."""
    try:
        C = torch._C
        return (torch.compiler.is_compiling, C._len_torch_dispatch_stack, C._is_torch_function_mode_enabled,
                C._get_tracing_state, C._functorch.peek_interpreter_stack, C._autograd._profiler_enabled,
                torch.is_grad_enabled)
    except AttributeError:
        return None


_PROBES = _probes()
try:
    from torch._library.custom_ops import CustomOpDef as _CustomOpDef
except ImportError:
    _CustomOpDef = None

if _CustomOpDef is not None and _PROBES is not None:
    _is_compiling = _PROBES[0]

    class _EagerOpDef(_CustomOpDef):
        """The registered op; an eager call that ``ExportedOp._direct`` allows runs the kernel directly."""

        def __call__(self, *args, **kwargs):
            if not _is_compiling() and not kwargs:  # under dynamo this folds to the dispatcher's call
                ex = self._kc_exported
                if ex.direct_calls and ex._direct(args):
                    return ex._run(args, None)
            return self._opoverload(*args, **kwargs)
else:
    _EagerOpDef = None

_TRACED: tuple = ()


def _traced_types() -> tuple:
    """The tensor types of a trace (fake and functional tensors), imported once."""
    global _TRACED
    if not _TRACED:
        from torch._subclasses.fake_tensor import FakeTensor
        from torch._subclasses.functional_tensor import FunctionalTensor

        _TRACED = (FakeTensor, FunctionalTensor)
    return _TRACED


_LAUNCH_LOCK = threading.Lock()


class _traceable_launches:
    """While the op is traced, ``kernel[grid](...)`` inside the solution goes through
    ``torch.library.wrap_triton``, which records the launch in the graph; the solution's source stays
    exactly what the gauntlet judged. Eager calls never enter this."""

    def __enter__(self):
        from triton.runtime.jit import KernelInterface

        _LAUNCH_LOCK.acquire()
        self._cls, self._orig = KernelInterface, KernelInterface.__getitem__

        def getitem(kernel, grid):
            return torch.library.wrap_triton(kernel)[grid]

        KernelInterface.__getitem__ = getitem
        return self

    def __exit__(self, *exc):
        self._cls.__getitem__ = self._orig
        _LAUNCH_LOCK.release()
        return False


def load(init_file: str, module_name: str) -> ExportedOp:
    return ExportedOp(Path(init_file).parent, module_name)
