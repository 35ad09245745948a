"""KernelBench problems -> kernelcraft task folders.

A KernelBench problem (github.com/ScalingIntelligence/KernelBench) is one Python file: ``class
Model(nn.Module)`` with ``__init__(*init_inputs)`` and ``forward(*inputs)``, module-level constants
(``batch_size = 16``), ``get_inputs()`` returning the forward arguments (usually tensors built from
those constants) and ``get_init_inputs()`` returning the constructor arguments.

:func:`import_kernelbench` turns each problem into ``out_dir/<problem stem>/``:

- ``definition.json``: inputs are forward()'s arguments (named after its parameters), then the
  model's parameters and buffers (``named_parameters()`` / ``named_buffers()``, ``.`` -> ``__``).
  Axes come from the module's int constants: each is changed in turn (halved, doubled) by patching
  the module's globals, ``get_inputs()`` re-run on the meta device, and the input dims that follow it
  get an axis of its name. Such an axis is ``var`` when changing the constant leaves
  ``get_init_inputs()`` alone, changes no dim other than those equal to it, keeps ``forward()``
  working (run on the meta device, or on the CPU when meta cannot) and every output dim is either
  constant or equal to one var axis in every shape tried; otherwise it is ``const``. Every other dim
  is a const axis ``<input>_d<k>`` / ``<output>_d<k>``. The reference embeds the problem's source
  verbatim and runs ``torch.func.functional_call(model, {parameters and buffers}, args)``.
- ``workloads.jsonl``: the problem's own shapes plus a smaller and a larger variant (every var axis
  halved / doubled together; one axis at a time where the joint variant does not run). Forward
  arguments are ``random`` (``contract.toml`` keeps integer inputs inside the range get_inputs()
  drew, and non-negative float inputs uniform over the range it drew); parameters and buffers come
  from ``weights.safetensors``: ``torch.manual_seed(seed)``, then ``Model(*get_init_inputs())``.
- ``baseline.py``: the problem's own PyTorch forward, same calling convention as the reference.
- ``README.md``: provenance (path, sha256, date, seed), the contract in words, why each axis is what
  it is.

Before a folder is kept, it must load, and its baseline must run on the smallest workload on the CPU,
twice with equal results (a forward using dropout or random numbers is refused), without writing its
inputs (or, if it does, those inputs are cloned first) and without returning views of them (cloned
if it does). A problem that cannot be converted is reported with its reason; the others still are.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import inspect
import json
import keyword
import math
import re
import shutil
import types
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernelcraft.task.dtypes import TORCH_DTYPES

OP_TYPE = "kernelbench"
SOURCE_TAG = "source:kernelbench"
_DTYPE_NAMES = {v: k for k, v in TORCH_DTYPES.items()}
_UUID_NAMESPACE = uuid.UUID("6b3c1e0a-5d2f-4f7e-9a51-6b6b1c2e8f40")


@dataclass
class ImportReport:
    converted: list[Path] = field(default_factory=list)  # the task folders written
    failures: list[tuple[Path, str]] = field(default_factory=list)  # (problem file, why it was not converted)
    warnings: list[str] = field(default_factory=list)  # converted, but worth a look


class ConversionError(Exception):
    """A problem that cannot become a task folder; the message says why."""


def import_kernelbench(paths: list[Path], out_dir: Path, seed: int = 0) -> ImportReport:
    """Convert KernelBench problem files (a folder means every ``*.py`` in it, sorted) into task
    folders under ``out_dir``; parameters are made under ``torch.manual_seed(seed)``."""
    out_dir = Path(out_dir)
    report = ImportReport()
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.glob("*.py") if f.is_file())
        elif p.is_file():
            files.append(p)
        else:
            report.failures.append((p, "not found (give KernelBench problem files, or folders of them)"))
    written: dict[str, Path] = {}
    for f in files:
        if f.stem in written:
            report.failures.append((f, f"{written[f.stem]} of this import already writes {out_dir / f.stem}; "
                                       "import problems with the same file name into different folders"))
            continue
        try:
            folder, warnings = _convert(f, out_dir, seed)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - one bad problem must not stop the others
            report.failures.append((f, str(e) if isinstance(e, ConversionError) else _describe_error(e)))
            continue
        written[f.stem] = f
        report.converted.append(folder)
        report.warnings += [f"{f}: {w}" for w in warnings]
    return report


# -- small helpers -------------------------------------------------------------------------------

def _describe_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    msg = text[0] if text else ""
    if len(msg) > 300:
        msg = msg[:300] + "..."
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


@contextmanager
def _stage(what: str) -> Iterator[None]:
    """Turn any failure inside into a ConversionError that says what was being done."""
    try:
        yield
    except ConversionError:
        raise
    except (Exception, SystemExit) as e:  # noqa: BLE001
        raise ConversionError(f"{what} failed: {_describe_error(e)}") from e


@contextmanager
def _seeded(seed: int) -> Iterator[None]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _dtype_name(dtype: torch.dtype, what: str) -> str:
    if dtype not in _DTYPE_NAMES:
        raise ConversionError(f"{what} has dtype {dtype}, which FlashInfer-Trace cannot describe")
    return _DTYPE_NAMES[dtype]


def _scalar_dtype(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    return "int64" if isinstance(value, int) else "float32"


def _identifier(name: str, prefix: str) -> str:
    name = re.sub(r"\W", "_", name)
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_kb"):
        name = f"{prefix}_{name}"
    return name


def _unique(name: str, taken: set[str]) -> str:
    out, i = name, 1
    while out in taken:
        out, i = f"{name}_{i}", i + 1
    taken.add(out)
    return out


def _same(a: Any, b: Any) -> bool:
    """Structural equality of get_init_inputs() results (tensors by value)."""
    try:
        if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
            return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                    and a.dtype == b.dtype and bool(torch.equal(a, b)))
        if isinstance(a, list | tuple) and isinstance(b, list | tuple):
            return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _python_literal(text: str) -> str:
    """A Python string literal equal to ``text``: a readable raw triple-quoted one when possible."""
    for quote in ("'''", '"""'):
        candidate = f"r{quote}{text}{quote}"
        try:
            if eval(compile(candidate, "<literal>", "eval"), {"__builtins__": {}}) == text:  # noqa: S307
                return candidate
        except SyntaxError:
            pass
    return repr(text)


def _describe_outputs(out: Any) -> list[tuple[tuple[int, ...] | None, Any]]:
    """forward()'s result -> [(shape or None for a Python number, torch dtype or Python type)]."""
    items = list(out) if isinstance(out, tuple | list) else [out]
    if not items:
        raise ConversionError("forward() returns an empty tuple; a task needs at least one output")
    desc = []
    for i, o in enumerate(items):
        if isinstance(o, torch.Tensor):
            desc.append((tuple(o.shape), o.dtype))
        elif isinstance(o, bool | int | float):
            desc.append((None, type(o)))
        else:
            where = f"item {i} of its result" if isinstance(out, tuple | list) else "its result"
            raise ConversionError(f"forward() returns {type(o).__name__} as {where}; only tensors and "
                                  "Python numbers can be outputs")
    return desc


def _structure(desc: list[tuple[tuple[int, ...] | None, Any]]) -> list[Any]:
    return [(None if s is None else len(s), d) for s, d in desc]


# -- the problem, executed in its own namespace ------------------------------------------------

class _Sample:
    """One call of get_inputs() (and get_init_inputs()) with some module constants changed."""

    def __init__(self, items: list[Any], init: list[Any], real: bool):
        self.items, self.init, self.real = items, init, real
        self.shapes = [tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in items]

    def kinds(self) -> list[Any]:
        return [(x.dtype, x.dim()) if isinstance(x, torch.Tensor) else type(x) for x in self.items]


class _Problem:
    def __init__(self, path: Path, seed: int):
        self.path, self.seed = path, seed
        with _stage("reading the file"):
            self.raw = path.read_bytes()
            self.source = self.raw.decode("utf-8")
        self.module = types.ModuleType("kernelbench_problem")
        self.module.__file__ = str(path)
        self.ns = self.module.__dict__
        with _stage("executing the problem file"), torch.random.fork_rng(devices=[]):
            exec(compile(self.source, str(path), "exec"), self.ns)  # noqa: S102 - the problem is trusted code
        model_cls = self.ns.get("Model")
        if not (isinstance(model_cls, type) and issubclass(model_cls, torch.nn.Module)):
            raise ConversionError("the file defines no `class Model(nn.Module)`")
        if not callable(self.ns.get("get_inputs")):
            raise ConversionError("the file defines no `get_inputs()`")
        self.model_cls = model_cls
        self.get_inputs = self.ns["get_inputs"]
        self.get_init_inputs = self.ns.get("get_init_inputs") or list
        self.consts = {k: v for k, v in self.ns.items()
                       if type(v) is int and not k.startswith("_") and k.isidentifier() and v >= 1}
        self._samples: dict[tuple, _Sample] = {}
        self._outputs: dict[tuple, list] = {}
        self.meta_model: torch.nn.Module | None = None
        self.cpu_model: torch.nn.Module | None = None
        self.probe_device = "meta"

    def sample(self, overrides: dict[str, int], real: bool = False) -> _Sample:
        """get_inputs() under torch.manual_seed(seed), with module constants patched; on the meta
        device unless ``real`` (or unless get_inputs() cannot run there)."""
        key = (tuple(sorted(overrides.items())), real)
        if key not in self._samples:
            saved = {k: self.ns[k] for k in overrides}
            self.ns.update(overrides)
            try:
                s = None
                if not real:
                    try:
                        with _seeded(self.seed), torch.device("meta"):
                            items = list(self.get_inputs())
                        s = _Sample([x.to("meta") if isinstance(x, torch.Tensor) else x for x in items], [], False)
                    except Exception:  # noqa: BLE001 - data-dependent get_inputs(): make the real tensors
                        s = None
                if s is None:
                    with _seeded(self.seed):
                        s = _Sample(list(self.get_inputs()), [], True)
                s.init = list(self.get_init_inputs())
            finally:
                self.ns.update(saved)
            self._samples[key] = s
        return self._samples[key]

    def forward(self, overrides: dict[str, int]) -> list[tuple[tuple[int, ...] | None, Any]]:
        """Output shapes and dtypes of forward() on the inputs of ``overrides`` (meta, else CPU)."""
        key = tuple(sorted(overrides.items()))
        if key not in self._outputs:
            if self.probe_device == "meta":
                s = self.sample(overrides)
                args = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in s.items]
                model = self.meta_model
            else:
                args = self.sample(overrides, real=True).items
                model = self.cpu_model
            with torch.no_grad():
                self._outputs[key] = _describe_outputs(model(*args))
        return self._outputs[key]


def _loose_tensors(model: torch.nn.Module) -> list[str]:
    """Tensors a module keeps as plain attributes (neither parameters nor buffers)."""
    found = []
    for mname, m in model.named_modules():
        for k, v in vars(m).items():
            if k in ("_parameters", "_buffers", "_modules"):
                continue
            values = list(v) if isinstance(v, list | tuple) else list(v.values()) if isinstance(v, dict) else [v]
            if any(isinstance(x, torch.Tensor) for x in values):
                found.append(f"{mname}.{k}" if mname else k)
    return found


# -- analysis --------------------------------------------------------------------------------

@dataclass
class _Input:
    name: str
    kind: str  # "tensor" (a forward argument), "scalar" (a forward argument), "state" (parameter/buffer)
    dtype: str
    shape: tuple[int, ...] | None
    axes: list[str] | None = None
    state_key: str | None = None  # the parameter/buffer name, for "state"
    is_buffer: bool = False


@dataclass
class _Plan:
    inputs: list[_Input]
    n_args: int
    outputs: list[tuple[str, list[str] | None, str]]  # (name, axes, dtype)
    axes: dict[str, dict]
    axis_why: dict[str, str]
    var: list[str]
    workloads: list[dict]  # {"axes": {...}, "scalars": {name: value}, "label": str}
    dists: dict[str, dict]  # contract [inputs.<name>]
    dist_why: dict[str, str]
    build_device: str
    loose: list[str]
    probe_device: str
    state: dict[str, torch.Tensor]


def _analyze(prob: _Problem) -> _Plan:
    seed = prob.seed
    with _stage("get_inputs()"):
        orig = prob.sample({}, real=True)
    for i, x in enumerate(orig.items):
        if isinstance(x, torch.Tensor):
            if x.device.type != "cpu":
                raise ConversionError(f"get_inputs() item {i} is on {x.device}; the importer needs CPU tensors")
        elif not isinstance(x, bool | int | float):
            raise ConversionError(f"get_inputs() item {i} is a {type(x).__name__}; only tensors and Python "
                                  "numbers can be inputs")
    with _stage("torch.manual_seed(seed); Model(*get_init_inputs())"):
        with _seeded(seed):
            init = list(prob.get_init_inputs())
            cpu_model = prob.model_cls(*init)
    prob.cpu_model = cpu_model
    params = list(cpu_model.named_parameters())
    buffers = list(cpu_model.named_buffers())
    state = {k: t.detach().clone().contiguous() for k, t in params + buffers}
    try:
        with _seeded(seed), torch.device("meta"):
            prob.meta_model = prob.model_cls(*list(prob.get_init_inputs()))
    except Exception:  # noqa: BLE001 - the model cannot be made on the meta device: probe on the CPU
        prob.meta_model = None
    loose = _loose_tensors(cpu_model)
    build_device = "meta" if prob.meta_model is not None and not loose else "cpu"

    # forward on the original shapes: meta first, CPU when meta cannot
    base_out = None
    if prob.meta_model is not None:
        try:
            base_out = prob.forward({})
        except ConversionError:
            raise
        except Exception:  # noqa: BLE001
            base_out = None
    if base_out is None:
        prob.probe_device = "cpu"
        prob._outputs.clear()
        with _stage("forward() on get_inputs()"):
            base_out = prob.forward({})

    # names of run()'s inputs: forward's parameters, then parameters and buffers
    sig = inspect.signature(prob.model_cls.forward)
    fparams = list(sig.parameters.values())[1:]
    arg_names: list[str] = []
    star = next((p.name for p in fparams if p.kind is p.VAR_POSITIONAL), None)
    positional = [p.name for p in fparams if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i in range(len(orig.items)):
        if i < len(positional):
            arg_names.append(positional[i])
        elif star is not None:
            arg_names.append(f"{star}_{i - len(positional)}")
        else:
            raise ConversionError(f"get_inputs() returns {len(orig.items)} items; forward() takes {len(positional)}")
    taken: set[str] = set()
    inputs: list[_Input] = []
    for name, x in zip(arg_names, orig.items, strict=True):
        nm = _unique(_identifier(name, "arg"), taken)
        if isinstance(x, torch.Tensor):
            inputs.append(_Input(nm, "tensor", _dtype_name(x.dtype, f"input {nm!r}"), tuple(x.shape)))
        else:
            inputs.append(_Input(nm, "scalar", _scalar_dtype(x), None))
    for key, t in params + buffers:
        nm = _unique(_identifier(key.replace(".", "__"), "p"), taken)
        inputs.append(_Input(nm, "state", _dtype_name(t.dtype, f"parameter/buffer {key!r}"), tuple(t.shape),
                             state_key=key, is_buffer=key in dict(buffers)))
    n_args = len(orig.items)

    # which module constants drive which input dims
    why: dict[str, str] = {}
    follows: dict[str, set[tuple[int, int]]] = {}
    changed_by: dict[tuple[int, int], set[str]] = {}
    eligible: list[str] = []
    orig_init = prob.sample({}).init
    for c, v in prob.consts.items():
        reasons = []
        fol: set[tuple[int, int]] = set()
        notfol: set[tuple[int, int]] = set()
        for v2 in _variants(v):
            try:
                s = prob.sample({c: v2})
            except Exception as e:  # noqa: BLE001
                reasons.append(f"get_inputs() fails with {c} = {v2} ({_describe_error(e)})")
                continue
            if not _same(s.init, orig_init):
                reasons.append("get_init_inputs() uses it, so changing it would change the model and its parameters")
            if s.kinds() != orig.kinds():
                reasons.append("changing it changes the number, rank or dtype of get_inputs()'s items")
                continue
            for i, (a, b) in enumerate(zip(orig.shapes, s.shapes, strict=True)):
                for k, (d, d2) in enumerate(zip(a or (), b or (), strict=True)):
                    if d2 != d:
                        changed_by.setdefault((i, k), set()).add(c)
                        (fol if (d == v and d2 == v2) else notfol).add((i, k))
        fol -= notfol
        if notfol:
            dims = ", ".join(f"{inputs[i].name} dim {k}" for i, k in sorted(notfol))
            reasons.append(f"changing it changes dims that do not equal it ({dims})")
        follows[c] = fol
        if fol and not reasons:
            eligible.append(c)
        elif fol:
            why[c] = "; ".join(dict.fromkeys(reasons))

    # input dims -> axis names
    dim_axis: dict[tuple[int, int], str] = {}
    for (i, k) in sorted({d for f in follows.values() for d in f}):
        dim_axis[(i, k)] = next(c for c in prob.consts if (i, k) in follows[c])
    named = [c for c in prob.consts if c in dim_axis.values()]
    axis_taken = set(named)

    int_inputs = [i for i, inp in enumerate(inputs[:n_args])
                  if inp.kind == "tensor" and not _torch_dtype(inp).is_floating_point
                  and _torch_dtype(inp) != torch.bool and orig.items[i].numel() > 0]

    def int_ranges(s: _Sample) -> list[tuple[int, int, int]]:
        """(low, high, count) of each integer input's drawn values."""
        return [(int(s.items[i].min()), int(s.items[i].max()) + 1, s.items[i].numel()) for i in int_inputs]

    orig_ranges = int_ranges(orig)
    ranges: list[tuple[int, int]] = []

    # validate var axes: forward at each changed shape, outputs expressible by the axes
    var = list(eligible)
    while True:
        try:
            out_dims, points, ranges = _validate(prob, var, base_out, int_inputs, orig_ranges, int_ranges, inputs)
        except _MakeConst as e:
            for c in e.names:
                var.remove(c)
                why[c] = e.reason
            continue
        break

    for c in var:
        v = prob.consts[c]
        tried = " and ".join(f"{c} = {x}" for x in _variants(v))
        why[c] = (f"module constant `{c}` (= {v} in the problem); get_inputs() dims follow it and forward() "
                  f"runs with {tried} ({prob.probe_device} device), the outputs following the axes")

    axes: dict[str, dict] = {}
    for c in named:
        axes[c] = {"type": "var", "description": f"module constant {c} (= {prob.consts[c]} in the problem)"} \
            if c in var else {"type": "const", "value": prob.consts[c], "description": f"module constant {c}"}
    for idx, inp in enumerate(inputs):
        if inp.shape is None:
            continue
        names = []
        for k, d in enumerate(inp.shape):
            if inp.kind != "state" and (idx, k) in dim_axis:
                names.append(dim_axis[(idx, k)])
                continue
            ax = _unique(f"{inp.name}_d{k}", axis_taken)
            axes[ax] = {"type": "const", "value": d, "description": f"{inp.name} dim {k}"}
            if inp.kind == "state":
                why[ax] = f"shape of {'buffer' if inp.is_buffer else 'parameter'} {inp.state_key} (fixed by the weights)"
            elif (idx, k) in changed_by:
                why[ax] = ("changes with module constant(s) " + ", ".join(f"`{c}`" for c in sorted(changed_by[(idx, k)]))
                           + " but does not equal one")
            else:
                why[ax] = "no module constant drives it"
            names.append(ax)
        inp.axes = names

    outputs = []
    out_taken = {i.name for i in inputs}
    for j, (shape, dtype) in enumerate(base_out):
        oname = _unique("output" if len(base_out) == 1 else f"output_{j}", out_taken)
        dt_name = _scalar_dtype(dtype(0)) if shape is None else _dtype_name(dtype, f"output {oname!r}")
        if shape is None:
            outputs.append((oname, None, dt_name))
            continue
        names = []
        for k, d in enumerate(shape):
            if out_dims[j][k] is not None:
                names.append(out_dims[j][k])
                continue
            ax = _unique(f"{oname}_d{k}", axis_taken)
            axes[ax] = {"type": "const", "value": d, "description": f"{oname} dim {k}"}
            why[ax] = "output dim, the same in every shape tried" if var else "output dim"
            names.append(ax)
        outputs.append((oname, names, dt_name))

    # workloads: the problem's own shapes, then the validated smaller / larger variants
    workloads = []
    for label, assign in points:
        s = prob.sample({c: assign[c] for c in var if assign[c] != prob.consts[c]})
        scalars = {inputs[i].name: s.items[i] for i in range(n_args) if inputs[i].kind == "scalar"}
        workloads.append({"label": label, "axes": {c: assign[c] for c in var}, "scalars": scalars})

    # contract: integer inputs within the drawn range; non-negative floats uniform over the drawn range
    dists: dict[str, dict] = {}
    dist_why: dict[str, str] = {}
    for i, (low, high) in zip(int_inputs, ranges, strict=True):
        dists[inputs[i].name] = {"dist": "randint", "low": low, "high": high}
        dist_why[inputs[i].name] = (f"integers in [{low}, {high}): the values get_inputs() drew lie in this range "
                                    "at every workload's shapes, so indices stay valid")
    for i in range(n_args):
        x = orig.items[i]
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1:
            lo, hi = float(x.min()), float(x.max())
            if math.isfinite(lo) and math.isfinite(hi) and 0.0 <= lo < hi:
                dists[inputs[i].name] = {"dist": "uniform", "low": lo, "high": hi}
                dist_why[inputs[i].name] = (f"uniform in [{lo:.6g}, {hi:.6g}): get_inputs() drew only values "
                                            "in this range, none negative")
    return _Plan(inputs, n_args, outputs, axes, why, var, workloads, dists, dist_why, build_device, loose,
                 prob.probe_device, state)


def _torch_dtype(inp: _Input) -> torch.dtype:
    return TORCH_DTYPES[inp.dtype]


def _variants(v: int) -> list[int]:
    return ([v // 2] if v >= 2 else []) + [2 * v]


class _MakeConst(Exception):
    """These var-axis candidates must be const, for this reason."""

    def __init__(self, names: list[str], reason: str):
        super().__init__(reason)
        self.names, self.reason = names, reason


def _validate(prob: _Problem, var: list[str], base_out, int_inputs, orig_ranges, int_ranges, inputs):
    """(axis name or None per output dim, workload points, range per integer input), or raise _MakeConst.

    An integer input's range (what get_inputs() drew) may change with a constant, e.g.
    ``randint(0, num_classes)``: the constant is made const when its changed shapes draw a different
    range from samples large enough that every value of the range shows up (>= 10 draws per value);
    the contract's range is the intersection over all workloads, valid at each whatever the samples."""
    singles: dict[tuple[str, int], list] = {}
    for c in var:
        for v2 in _variants(prob.consts[c]):
            try:
                out = prob.forward({c: v2})
            except Exception as e:  # noqa: BLE001
                raise _MakeConst([c], f"forward() fails with {c} = {v2} ({_describe_error(e)})") from e
            if _structure(out) != _structure(base_out):
                raise _MakeConst([c], f"forward() returns differently shaped results with {c} = {v2}")
            if int_inputs:
                try:
                    ranges = int_ranges(prob.sample({c: v2}, real=True))
                except Exception as e:  # noqa: BLE001
                    raise _MakeConst([c], f"get_inputs() fails on the CPU with {c} = {v2} ({_describe_error(e)})") from e
                for i, (lo, hi, n), (lo0, hi0, n0) in zip(int_inputs, ranges, orig_ranges, strict=True):
                    if (lo, hi) != (lo0, hi0) and min(n, n0) >= 10 * max(hi - lo, hi0 - lo0):
                        raise _MakeConst([c], f"the range of integer input {inputs[i].name} changes with it "
                                              f"([{lo0}, {hi0}) -> [{lo}, {hi}) with {c} = {v2})")
            singles[(c, v2)] = out

    base_assign = {c: prob.consts[c] for c in var}
    pts = [(base_assign, base_out)] + [({**base_assign, c: v2}, out) for (c, v2), out in singles.items()]
    out_dims: list[list[str | None] | None] = []
    for j, (shape, _) in enumerate(base_out):
        if shape is None:
            out_dims.append(None)
            continue
        dims: list[str | None] = []
        for k, d in enumerate(shape):
            match = [c for c in var if all(o[j][0][k] == a[c] for a, o in pts)]
            if match:
                dims.append(match[0])
            elif all(o[j][0][k] == d for _, o in pts):
                dims.append(None)
            else:
                culprits = [c for c in var if any(out[j][0][k] != d for (c2, _), out in singles.items() if c2 == c)]
                unfollowed = [c for c in culprits
                              if any(out[j][0][k] != v2 for (c2, v2), out in singles.items() if c2 == c)]
                drop = unfollowed or culprits or list(var)
                raise _MakeConst(drop, f"output {j} dim {k} changes with it in a way no axis expresses "
                                       f"(it is {d} in the problem)")
        out_dims.append(dims)

    def consistent(assign: dict[str, int], out) -> bool:
        if _structure(out) != _structure(base_out):
            return False
        for j, dims in enumerate(out_dims):
            for k, name in enumerate(dims or []):
                want = base_out[j][0][k] if name is None else assign[name]
                if out[j][0][k] != want:
                    return False
        return True

    points: list[tuple[str, dict[str, int]]] = [("the problem's own shapes", base_assign)]
    if var:
        joint_ok = []
        for label, assign in (("smaller: every var axis halved", {c: v // 2 if v >= 2 else v for c, v in base_assign.items()}),
                              ("larger: every var axis doubled", {c: 2 * v for c, v in base_assign.items()})):
            if assign == base_assign:
                continue
            overrides = {c: x for c, x in assign.items() if x != base_assign[c]}
            try:
                out = prob.forward(overrides)
                ok = consistent(assign, out)
            except Exception:  # noqa: BLE001
                ok = False
            if ok:
                joint_ok.append((label, assign))
        if len(joint_ok) == 2 or (len(joint_ok) == 1 and all(v < 2 for v in base_assign.values())):
            points += joint_ok
        else:
            points += [(f"{c} = {v2}", {**base_assign, c: v2}) for (c, v2) in singles]
        points.sort(key=lambda p: sum(p[1].values()))
    final: list[tuple[int, int]] = [(lo, hi) for lo, hi, _ in orig_ranges]
    for label, assign in points[1:] if int_inputs else []:
        overrides = {c: x for c, x in assign.items() if x != base_assign[c]}
        try:
            got = int_ranges(prob.sample(overrides, real=True))
        except Exception as e:  # noqa: BLE001
            raise _MakeConst(list(var), f"get_inputs() fails on the CPU at {label} ({_describe_error(e)})") from e
        final = [(max(lo, g[0]), min(hi, g[1])) for (lo, hi), g in zip(final, got, strict=True)]
    for i, (lo, hi) in zip(int_inputs, final, strict=True):
        if lo >= hi:
            raise _MakeConst(list(var), f"the values of integer input {inputs[i].name} drawn at the different "
                                        "shapes have no range in common")
    return out_dims, points, final


# -- writing ---------------------------------------------------------------------------------

def _task_name(stem: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]+", "_", stem).strip("_").lower() or "kernelbench_problem"


def _runner_source(kind: str, plan: _Plan, prob: _Problem, name: str, sha: str, seed: int,
                   clone_positions: list[int], clone_outputs: bool) -> str:
    args = [i.name for i in plan.inputs]
    fwd = args[:plan.n_args]
    state_keys = [i.state_key for i in plan.inputs[plan.n_args:]]
    if kind == "reference":
        doc = (f"Reference for KernelBench problem {prob.path.name}: Model(*get_init_inputs()).forward("
               f"{', '.join(fwd)}).\n\n")
    else:
        doc = (f"Baseline: KernelBench problem {prob.path.name}'s own PyTorch forward, in the inputs' precision.\n\n"
               "The same computation as the reference (it is the problem's forward); this is the number to beat.\n")
    doc += (
        "The model's parameters and buffers are inputs of run() (named after named_parameters() and\n"
        "named_buffers(), '.' -> '__'), passed with torch.func.functional_call; the model itself is built\n"
        f"once, on the {plan.build_device} device, from the problem source embedded below, and stays in\n"
        "training mode, as KernelBench runs it.\n"
    )
    if plan.build_device == "cpu" and plan.loose:
        doc += (f"It is built on the CPU under torch.manual_seed({seed}) because it keeps tensors that are not\n"
                f"parameters or buffers ({', '.join(plan.loose)}).\n")
    clone_doc = "run() inputs the forward writes in place (cloned first, so inputs stay unmodified)"
    lines = [
        f'"""{doc}"""',
        "",
        "import linecache",
        "import types",
        "",
        "import torch",
        "",
        f"# KernelBench problem {prob.path.name}, verbatim (sha256 {sha})",
        f"PROBLEM_SOURCE = {_python_literal(prob.source)}",
        "",
        f"_BUILD_DEVICE = {plan.build_device!r}",
        f"_SEED = {seed}  # torch.manual_seed before get_init_inputs() and Model(...), as when imported",
        f"_N_ARGS = {plan.n_args}  # forward() arguments; the rest of run()'s inputs are parameters and buffers",
        f"_STATE_NAMES = {tuple(state_keys)!r}",
        f"_CLONE = {tuple(clone_positions)!r}  # {clone_doc}",
        f"_CLONE_OUTPUTS = {clone_outputs!r}  # the forward returns views of its inputs: outputs are copied",
        "_cache = {}",
        "",
        "",
        "def _model():",
        '    if "model" not in _cache:',
        f'        filename = "<kernelbench {name}>"',
        "        linecache.cache[filename] = (len(PROBLEM_SOURCE), None, PROBLEM_SOURCE.splitlines(True), filename)",
        '        module = types.ModuleType("kernelbench_problem")',
        "        with torch.random.fork_rng(devices=[]):  # the problem's own seeding stays in here",
        '            exec(compile(PROBLEM_SOURCE, filename, "exec"), module.__dict__)',
        "            torch.manual_seed(_SEED)",
        '            init_inputs = list(getattr(module, "get_init_inputs", list)())',
        "            with torch.device(_BUILD_DEVICE):",
        '                _cache["model"] = module.Model(*init_inputs)',
        '    return _cache["model"]',
        "",
        "",
        "def _forward(values):",
        "    values = [v.clone() if i in _CLONE else v for i, v in enumerate(values)]",
        "    state = dict(zip(_STATE_NAMES, values[_N_ARGS:], strict=True))",
        "    with torch.no_grad():",
        "        out = torch.func.functional_call(_model(), state, tuple(values[:_N_ARGS]))",
        "    if isinstance(out, list):",
        "        out = tuple(out)",
        "    if _CLONE_OUTPUTS:",
        "        if isinstance(out, tuple):",
        "            return tuple(o.clone() if isinstance(o, torch.Tensor) else o for o in out)",
        "        return out.clone() if isinstance(out, torch.Tensor) else out",
        "    return out",
        "",
        "",
        f"def run({', '.join(args)}):",
        f"    return _forward([{', '.join(args)}])",
        "",
    ]
    return "\n".join(lines)


def _definition(plan: _Plan, prob: _Problem, name: str, seed: int, reference: str) -> dict:
    inputs = {}
    for inp in plan.inputs:
        desc = {"tensor": "forward() argument", "scalar": "forward() argument (a Python number)",
                "state": f"{'buffer' if inp.is_buffer else 'parameter'} {inp.state_key}"}[inp.kind]
        inputs[inp.name] = {"shape": inp.axes if inp.shape is not None else None, "dtype": inp.dtype,
                            "description": desc}
    outputs = {o: {"shape": axes, "dtype": dtype} for o, axes, dtype in plan.outputs}
    state_note = (f" Parameters and buffers come from torch.manual_seed({seed}) then "
                  "Model(*get_init_inputs()), stored in weights.safetensors." if plan.n_args < len(plan.inputs) else "")
    return {
        "name": name,
        "op_type": OP_TYPE,
        "description": f"KernelBench problem {prob.path.name}: Model.forward, imported with seed {seed}.{state_note}",
        "tags": [SOURCE_TAG],
        "axes": plan.axes,
        "constraints": [f"{c} >= 1" for c in plan.var],
        "inputs": inputs,
        "outputs": outputs,
        "reference": reference,
    }


def _workload_lines(plan: _Plan, name: str) -> list[str]:
    lines = []
    for w in plan.workloads:
        specs: dict[str, dict] = {}
        for inp in plan.inputs:
            if inp.kind == "state":
                specs[inp.name] = {"type": "safetensors", "path": "weights.safetensors", "tensor_key": inp.state_key}
            elif inp.kind == "scalar":
                specs[inp.name] = {"type": "scalar", "value": w["scalars"][inp.name]}
            else:
                specs[inp.name] = {"type": "random"}
        uid = uuid.uuid5(_UUID_NAMESPACE, f"{name}/{json.dumps(w['axes'], sort_keys=True)}")
        lines.append(json.dumps({"definition": name, "workload": {"uuid": str(uid), "axes": w["axes"], "inputs": specs},
                                 "solution": None, "evaluation": None}))
    return lines


def _contract(plan: _Plan) -> str:
    out = ["# Written by `kernelcraft import kernelbench`: how random inputs are drawn (see README.md).", ""]
    for nm, d in plan.dists.items():
        out.append(f"[inputs.{nm}]")
        out.append(f'dist = "{d["dist"]}"')
        for k in ("low", "high"):
            out.append(f"{k} = {float(d[k])!r}")
        out.append("")
    return "\n".join(out)


def _readme(plan: _Plan, prob: _Problem, name: str, sha: str, seed: int, smoke_note: str) -> str:
    fwd = plan.inputs[:plan.n_args]
    state = plan.inputs[plan.n_args:]
    sig = ", ".join(i.name for i in plan.inputs)

    def shape(axes: list[str] | None) -> str:
        return "scalar" if axes is None else "[" + ", ".join(axes) + "]"

    lines = [
        f"# {name}",
        "",
        f"KernelBench problem `{prob.path.name}`, converted by `kernelcraft import kernelbench`.",
        "",
        f"- source: `{prob.path.resolve()}`",
        f"- sha256 of the source: `{sha}`",
        f"- imported: {dt.datetime.now(dt.UTC).date().isoformat()}",
        f"- seed: {seed} (`torch.manual_seed({seed})`, then `Model(*get_init_inputs())`; "
        + ("its parameters and buffers are stored in `weights.safetensors`)" if state else "the model has no "
           "parameters or buffers)"),
        "",
        "## The contract",
        "",
        f"`run({sig})` returns what the problem's `Model(*get_init_inputs()).forward("
        f"{', '.join(i.name for i in fwd)})` returns"
        + (", with the model's parameters and buffers replaced by the inputs of the same name "
           "(`torch.func.functional_call`)" if state else "")
        + ". The model is in training mode, as KernelBench runs it (BatchNorm uses the batch's statistics).",
        "",
        "Inputs:",
        "",
    ]
    for i in fwd:
        how = plan.dist_why.get(i.name)
        if i.kind == "scalar":
            how = "a Python number, the value get_inputs() returns (per workload)"
        elif how is None:
            how = "random, kernelcraft's default distribution for its dtype (floats N(0, 1))"
        lines.append(f"- `{i.name}`: {i.dtype} {shape(i.axes)}, forward() argument; {how}")
    for i in state:
        lines.append(f"- `{i.name}`: {i.dtype} {shape(i.axes)}, {'buffer' if i.is_buffer else 'parameter'} "
                     f"`{i.state_key}`, fixed: `weights.safetensors[{i.state_key!r}]`")
    lines += ["", "Outputs:", ""]
    for o, axes, dtype in plan.outputs:
        lines.append(f"- `{o}`: {dtype} {shape(axes)}")
    lines += [
        "",
        "Correctness: kernelcraft's default tolerances for the output dtype, against the reference run in "
        "float64 (every floating input, parameters included, upcast)"
        + (", integer and float input distributions from `contract.toml`" if plan.dists else "") + ".",
        "",
        "## Axes",
        "",
        "| axis | kind | value | why |",
        "|---|---|---|---|",
    ]
    for ax, spec in plan.axes.items():
        value = "per workload" if spec["type"] == "var" else str(spec["value"])
        lines.append(f"| `{ax}` | {spec['type']} | {value} | {plan.axis_why.get(ax, '')} |")
    lines += [
        "",
        f"Shapes were probed on the {plan.probe_device} device: each module int constant changed (halved, "
        "doubled) in the module's globals, get_inputs() and forward() run again. A dim is var only when it "
        "follows a constant that get_init_inputs() does not use, forward() works at the changed shapes and "
        "every output dim is constant or equals one var axis in every shape tried; otherwise it is const "
        "at the problem's value (correctness first).",
        "",
        "## Workloads",
        "",
    ]
    for w in plan.workloads:
        axes = ", ".join(f"{k}={v}" for k, v in w["axes"].items()) or "no var axes"
        lines.append(f"- {w['label']}: {axes}")
    lines += [
        "",
        "## Baseline",
        "",
        "`baseline.py` is the problem's own PyTorch forward (the same `functional_call` as the reference, "
        "in the inputs' own precision): KernelBench's eager PyTorch time is the number to beat.",
    ]
    if smoke_note:
        lines += ["", "## Notes", "", smoke_note]
    return "\n".join(lines) + "\n"


# -- the check before a folder is kept -------------------------------------------------------

def _load_run(text: str, filename: str):
    ns: dict[str, Any] = {"__name__": "kc_kernelbench_check"}
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - our own generated code
    return ns["run"]


def _storages(values: list[Any]) -> list[tuple[int, int]]:
    return [(v.untyped_storage().data_ptr(), v.untyped_storage().nbytes())
            for v in values if isinstance(v, torch.Tensor) and v.device.type != "meta"]


def _as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple | list) else [out]


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point():
            return bool(torch.equal(torch.isnan(a), torch.isnan(b)) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)))
        return bool(torch.equal(a, b))
    return a == b or (a != a and b != b)


def _smoke(folder: Path, seed: int) -> tuple[list[int], bool, list[str]]:
    """Run the folder's baseline (twice) and reference on its smallest workload, on the CPU.
    Returns (input positions the forward wrote, whether outputs alias inputs, warnings)."""
    from kernelcraft.task.inputs import make_inputs
    from kernelcraft.task.loader import load_task

    with _stage("loading the written task folder"):
        task = load_task(folder)
    d = task.definition

    def size(w) -> int:
        axes = d.axis_values(w.axes)
        return sum(math.prod(d.shape(s, axes)) for s in d.inputs.values() if s.shape is not None)

    w = min(task.workloads, key=size)
    axes = d.axis_values(w.axes)
    with _stage("making the smallest workload's inputs"):
        inputs = make_inputs(task, w, seed, "cpu")
    baseline = _load_run((folder / "baseline.py").read_text(), str(folder / "baseline.py"))
    reference = _load_run(d.reference, "<reference>")
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]
    with _stage("the baseline on the smallest workload"):
        with torch.no_grad():
            first = _as_list(baseline(*args))
    written = [i for i, (a, b) in enumerate(zip(inputs, args, strict=True))
               if isinstance(a, torch.Tensor) and not _equal(a, b)]
    spans = _storages(args)
    aliased = any(start <= o.untyped_storage().data_ptr() < start + n
                  for o in first if isinstance(o, torch.Tensor) and o.numel() for start, n in spans)
    if written or aliased:
        return written, aliased, []
    with _stage("the baseline, run again"):
        with torch.no_grad():
            second = _as_list(baseline(*[a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]))
    if len(first) != len(second) or not all(_equal(a, b) for a, b in zip(first, second, strict=True)):
        raise ConversionError("forward() gives different results on the same inputs (dropout in training "
                              "mode, or random numbers in forward?); a task needs a deterministic reference")
    if len(first) != len(d.outputs):
        raise ConversionError(f"the baseline returned {len(first)} values for {len(d.outputs)} outputs")
    for (oname, spec), got in zip(d.outputs.items(), first, strict=True):
        want = d.shape(spec, axes)
        if want is not None and (not isinstance(got, torch.Tensor) or tuple(got.shape) != want
                                 or _DTYPE_NAMES.get(got.dtype) != spec.dtype):
            got_desc = f"{tuple(got.shape)} {got.dtype}" if isinstance(got, torch.Tensor) else type(got).__name__
            raise ConversionError(f"output {oname!r} on workload {w.axes}: the baseline gives {got_desc}, the "
                                  f"definition says {want} {spec.dtype} (an importer bug: please report it)")
    warnings = []
    upcast = [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in inputs]
    try:
        with torch.no_grad():
            expected = _as_list(reference(*upcast))
    except (RuntimeError, TypeError, NotImplementedError) as e:
        warnings.append(f"the reference cannot run in float64 ({_describe_error(e)}); the harness then "
                        "compares against it in the inputs' own precision")
        with _stage("the reference on the smallest workload"), torch.no_grad():
            expected = _as_list(reference(*inputs))
    for (oname, spec), got, ref in zip(d.outputs.items(), first, expected, strict=True):
        if not isinstance(got, torch.Tensor) or not got.is_floating_point():
            continue
        tol = task.contract.tolerance.for_output(oname, spec.dtype)
        g, r = got.double(), ref.double()
        finite = torch.isfinite(g) & torch.isfinite(r)
        err = (g - r).abs()
        bad = finite & (err > tol.atol) & (err > tol.rtol * r.abs())
        if int(bad.sum()):
            warnings.append(f"on the smallest workload ({w.axes}) the baseline differs from the float64 reference "
                            f"beyond the default {spec.dtype} tolerance in {int(bad.sum())} of {bad.numel()} elements "
                            f"of {oname!r} (max abs error {float(err[finite].max()):.3g}); the baseline may fail its "
                            "own task: consider a [tolerance] in contract.toml")
    return [], False, warnings


# -- one problem -----------------------------------------------------------------------------

def _convert(path: Path, out_dir: Path, seed: int) -> tuple[Path, list[str]]:
    prob = _Problem(path, seed)
    plan = _analyze(prob)
    name = _task_name(path.stem)
    sha = hashlib.sha256(prob.raw).hexdigest()
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{path.stem}.kc-import-{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir()
        (tmp / "workloads.jsonl").write_text("\n".join(_workload_lines(plan, name)) + "\n")
        if plan.state:
            from safetensors.torch import save_file

            with _stage("writing weights.safetensors"):
                save_file(plan.state, str(tmp / "weights.safetensors"))
                shutil.copymode(tmp / "workloads.jsonl", tmp / "weights.safetensors")
        if plan.dists:
            (tmp / "contract.toml").write_text(_contract(plan))
        clone: list[int] = []
        clone_outputs = False
        warnings: list[str] = []
        # Inputs the forward writes get cloned first; outputs that are views of inputs get copied
        # (only if they still are once written inputs are cloned).
        for attempt in range(3):
            reference = _runner_source("reference", plan, prob, name, sha, seed, clone, clone_outputs)
            (tmp / "definition.json").write_text(json.dumps(_definition(plan, prob, name, seed, reference), indent=2) + "\n")
            (tmp / "baseline.py").write_text(_runner_source("baseline", plan, prob, name, sha, seed, clone, clone_outputs))
            (tmp / "README.md").write_text(_readme(plan, prob, name, sha, seed, ""))
            written, aliased, warnings = _smoke(tmp, seed)
            if not written and not aliased:
                break
            if attempt == 2:
                raise ConversionError("the generated baseline still writes its inputs or returns views of them")
            if written:
                clone = sorted(set(clone) | set(written))
            else:
                clone_outputs = True
        notes = []
        if clone:
            names = ", ".join(f"`{plan.inputs[i].name}`" for i in clone)
            notes.append(f"- forward() writes {names} in place (e.g. BatchNorm's running statistics in training "
                         "mode); the reference and the baseline clone them first, so inputs stay unmodified.")
        if clone_outputs:
            notes.append("- forward() returns views of its inputs; the reference and the baseline return copies.")
        if plan.build_device == "cpu":
            why = (f"it keeps tensors that are not parameters or buffers ({', '.join(plan.loose)}), made from the "
                   "seed" if plan.loose else "it cannot be built on the meta device")
            notes.append(f"- the model is built on the CPU because {why}.")
        notes += [f"- {w}" for w in warnings]
        (tmp / "README.md").write_text(_readme(plan, prob, name, sha, seed, "\n".join(notes)))
        final = out_dir / path.stem
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final, warnings
