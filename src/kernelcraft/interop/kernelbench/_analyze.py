"""A problem -> the plan of its task: inputs, outputs, axes (var or const, and why), workloads, contract."""

from __future__ import annotations

import inspect
import resource
from dataclasses import dataclass
from typing import Any

import torch

from ._errors import ConversionError, _describe_error, _stage
from ._names import _dtype_name, _identifier, _scalar_dtype, _unique
from ._problem import _loose_tensors, _Problem, _Sample, _seeded
from ._validate import Derived, _MakeConst, _validate, _variants, scaled_point


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
    build_device: str
    loose: list[str]
    probe_device: str
    state: dict[str, torch.Tensor]
    constraints: list[str]  # ties each derived output axis (var, not a module constant) to the axis it follows


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


def _analyze(prob: _Problem) -> _Plan:
    with _stage("get_inputs()"):
        orig = prob.sample({})  # on the meta device where it can be: shapes and dtypes, no memory
    _check_items(orig)
    params, buffers, state, loose = _build_models(prob)
    build_device = "meta" if prob.meta_model is not None and not loose else "cpu"
    base_out = _base_outputs(prob)
    inputs = _name_inputs(prob, orig, params, buffers)
    n_args = len(orig.items)
    follows, changed_by, eligible, why = _trace_constants(prob, orig, inputs)

    # input dims -> axis names
    dim_axis: dict[tuple[int, int], str] = {}
    for (i, k) in sorted({d for f in follows.values() for d in f}):
        dim_axis[(i, k)] = next(c for c in prob.consts if (i, k) in follows[c])
    named = [c for c in prob.consts if c in dim_axis.values()]
    axis_taken = set(named)

    # validate var axes: forward at each changed shape, outputs expressible by the axes
    var = list(eligible)
    while True:
        try:
            out_dims, points = _validate(prob, var, base_out)
        except _MakeConst as e:
            for c in e.names:
                var.remove(c)
                why[c] = e.reason
            continue
        break
    # the weights are task inputs (weights.safetensors): `eval` counts them against --cpu-max-mb too
    small = scaled_point(prob, var, base_out, out_dims, points,
                         state_bytes=sum(t.numel() * t.element_size() for t in state.values()),
                         state_what="parameters and buffers" if buffers else "parameters")
    if small is not None:
        points = [small, *points]

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
    derived: dict[str, Derived] = {}  # output axes computed from a var axis
    out_taken = {i.name for i in inputs}
    for j, (shape, dtype) in enumerate(base_out):
        oname = _unique("output" if len(base_out) == 1 else f"output_{j}", out_taken)
        dt_name = _scalar_dtype(dtype(0)) if shape is None else _dtype_name(dtype, f"output {oname!r}")
        if shape is None:
            outputs.append((oname, None, dt_name))
            continue
        names = []
        for k, d in enumerate(shape):
            dim = out_dims[j][k]
            if isinstance(dim, Derived):
                ax = _unique(f"{oname}_d{k}", axis_taken)
                axes[ax] = {"type": "var", "description": f"{oname} dim {k}: {dim.formula}"}
                why[ax] = (f"output dim that follows `{dim.axis}` as {dim.formula} in every shape tried "
                           "(a definition constraint ties them)")
                derived[ax] = dim
                names.append(ax)
                continue
            if dim is not None:
                names.append(dim)
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
        values = {c: assign[c] for c in var} | {ax: dim.value(assign) for ax, dim in derived.items()}
        workloads.append({"label": label, "axes": values, "scalars": scalars})

    constraints = [f"{ax} == {dim.formula}" for ax, dim in derived.items()]
    return _Plan(inputs, n_args, outputs, axes, why, var, workloads, build_device, loose,
                 prob.probe_device, state, constraints)


def _check_items(orig: _Sample) -> None:
    for i, x in enumerate(orig.items):
        if isinstance(x, torch.Tensor):
            if x.device.type not in ("cpu", "meta"):
                raise ConversionError(f"get_inputs() item {i} is on {x.device}; the importer needs CPU tensors")
        elif not isinstance(x, bool | int | float):
            raise ConversionError(f"get_inputs() item {i} is a {type(x).__name__}; only tensors and Python "
                                  "numbers can be inputs")


def _build_models(prob: _Problem) -> tuple[list, list, dict[str, torch.Tensor], list[str]]:
    """Build the model on the CPU (its parameters and buffers become the task's weights) and, where it
    can be, on the meta device; returns (parameters, buffers, their tensors, loose tensors)."""
    seed = prob.seed
    try:
        with _seeded(seed), torch.device("meta"):
            meta = prob.model_cls(*list(prob.get_init_inputs()))
        size = sum(t.numel() * t.element_size() for t in list(meta.parameters()) + list(meta.buffers()))
    except Exception:  # noqa: BLE001 - built on the CPU below, or failing there with its reason
        meta, size = None, 0
    _fits_in_memory(size)
    with _stage("torch.manual_seed(seed); Model(*get_init_inputs())"):
        with _seeded(seed):
            init = list(prob.get_init_inputs())
            cpu_model = prob.model_cls(*init)
    prob.cpu_model = cpu_model
    params = list(cpu_model.named_parameters())
    buffers = list(cpu_model.named_buffers())
    state = {k: t.detach().contiguous() for k, t in params + buffers}  # no copy: a large model is large once
    prob.meta_model = meta  # None: the model cannot be made on the meta device, so probes run on the CPU
    loose = _loose_tensors(cpu_model)
    return params, buffers, state, loose


def _fits_in_memory(param_bytes: int) -> None:
    """The weights are made on the CPU (they are stored in weights.safetensors): refuse a model whose
    parameters alone would not fit the process's memory limit, with the numbers, before allocating them."""
    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    if soft == resource.RLIM_INFINITY or not param_bytes:
        return
    with open("/proc/self/status") as f:
        used = next(int(ln.split()[1]) << 10 for ln in f if ln.startswith("VmData:"))
    if 2 * param_bytes > soft - used:
        raise ConversionError(f"too large for this import: the model's parameters and buffers take {param_bytes / 1e6:.4g} MB, "
                              f"and making and storing them needs about twice that, more than the memory limit "
                              f"({soft >> 20} MB, --max-memory-mb) leaves ({(soft - used) / 1e6:.4g} MB)")


def _base_outputs(prob: _Problem) -> list[tuple[tuple[int, ...] | None, Any]]:
    """forward() on the original shapes: on the meta device first; on the CPU when meta cannot, and
    then every later probe runs on the CPU too."""
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
    return base_out


def _name_inputs(prob: _Problem, orig: _Sample, params: list, buffers: list) -> list[_Input]:
    """run()'s inputs: forward's parameters, then parameters and buffers."""
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
    return inputs


def _trace_constants(prob: _Problem, orig: _Sample, inputs: list[_Input]) -> tuple[
        dict[str, set[tuple[int, int]]], dict[tuple[int, int], set[str]], list[str], dict[str, str]]:
    """Which module constants drive which input dims: (dims that follow each constant, constants
    changing each dim, constants eligible as var axes, why each other followed constant is not)."""
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
    return follows, changed_by, eligible, why
