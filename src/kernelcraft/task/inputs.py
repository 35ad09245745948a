"""Make the inputs of one workload, on one device, from one seed (the judge's job: trusted code only).

Distributions of ``random`` inputs (documented defaults; ``[inputs.<name>]`` in contract.toml
overrides; ``low``/``high``/``total`` may be expressions over axis names, e.g. ``high = "vocab_size"``):
floats N(0, 1) drawn in float32 and rounded to the dtype; int8 randint[-128, 128); other signed ints
randint[-1024, 1024); uint8 randint[0, 256); bool randint[0, 2). A random input with ``shape: null``
is a Python scalar drawn the same way. ``softmax`` and ``offsets`` make probabilities and
non-decreasing offsets (``[batch + 1]``, 0 to ``total``), see :mod:`kernelcraft.task.contract`.

A task may instead name its own generator (``[inputs] generator = "FILE::FUNC"``): it is called with
the workload's axis values, the device and the workload's seed, and its result is checked against
the definition (count, shapes, dtypes). Scalar and safetensors inputs always come from the workload.

Every workload gets its own generator seeded from (run seed, workload uuid), so one workload can be
replayed alone with the same ``--seed`` and its inputs do not depend on which others ran. After
drawing, the definition's constraints over input values (``num_kv_indices == kv_indptr[-1].item()``)
are evaluated on the inputs; a violation is an error naming the constraint, never a silent pass.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernelcraft.task.contract import InputDistribution
from kernelcraft.task.dtypes import torch_dtype
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload


class InputsError(ValueError):
    """The task's inputs cannot be made as its files say (the task's fault, never the candidate's)."""


def workload_seed(seed: int, uuid: str) -> int:
    digest = hashlib.sha256(f"{seed}:{uuid}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def _default_dist(dtype: torch.dtype) -> InputDistribution:
    if dtype.is_floating_point:
        return InputDistribution(dist="normal")
    if dtype == torch.bool:
        return InputDistribution(dist="randint", low=0, high=2)
    if dtype == torch.int8:
        return InputDistribution(dist="randint", low=-128, high=128)
    if dtype == torch.uint8:
        return InputDistribution(dist="randint", low=0, high=256)
    return InputDistribution(dist="randint", low=-1024, high=1024)


def _total(dist: InputDistribution, axes: dict[str, int]) -> int:
    from kernelcraft.task.definition import eval_expression

    return int(eval_expression(dist.total, axes)) if isinstance(dist.total, str) else int(dist.total)


def _offsets(name: str, shape: tuple[int, ...], dist: InputDistribution, gen: torch.Generator, axes: dict[str, int],
             bound: torch.Tensor | None) -> torch.Tensor:
    """Offsets 0 = o[0] <= ... <= o[-1] = total; segments >= 1 when total >= segments. ``bound``: the
    offsets each segment must fit inside (a slot per bound element, ``total`` of them chosen)."""
    if len(shape) != 1 or shape[0] < 1:
        raise InputsError(f"input {name!r}: dist \"offsets\" needs a 1-d shape [segments + 1], got {list(shape)}")
    n, total = shape[0] - 1, _total(dist, axes)
    if total < 0 or (n == 0 and total != 0):
        raise InputsError(f"input {name!r}: cannot make {n} segment(s) summing to total {total}")
    if bound is not None:
        bound = bound.to("cpu", torch.int64)
        room = int(bound[-1])
        if bound.numel() != n + 1 or total > room:
            raise InputsError(f"input {name!r}: {total} positions do not fit within {dist.within!r} "
                              f"({bound.numel() - 1} segments holding {room})")
        chosen = torch.randperm(room, generator=gen)[:total]
        counts = torch.bincount(torch.searchsorted(bound[1:], chosen, right=True), minlength=n)
    elif n == 0:
        counts = torch.zeros(0, dtype=torch.int64)
    elif total >= n:
        cuts = (torch.randperm(total - 1, generator=gen)[:n - 1] + 1).sort().values if n > 1 else torch.zeros(0, dtype=torch.int64)
        edges = torch.cat([torch.zeros(1, dtype=torch.int64), cuts, torch.tensor([total])])
        counts = edges[1:] - edges[:-1]
    else:  # fewer positions than segments: some segments are empty
        counts = torch.bincount(torch.randint(0, n, (total,), generator=gen), minlength=n)
    return torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])


def _draw(name: str, shape: tuple[int, ...], dtype: torch.dtype, dist: InputDistribution, gen: torch.Generator,
          device: str, axes: dict[str, int], bound: torch.Tensor | None = None) -> torch.Tensor:
    if dist.dist == "offsets":
        return _offsets(name, shape, dist, gen, axes, bound).to(device=device, dtype=dtype)
    low, high = dist.bounds(axes)
    if dist.dist == "randint":
        t = torch.randint(int(low), int(high), shape, generator=gen, device=device, dtype=torch.int64)
    else:
        t = torch.empty(shape, dtype=torch.float32, device=device)
        if dist.dist in ("normal", "softmax"):
            t.normal_(dist.mean, dist.std, generator=gen)
            if dist.dist == "softmax":
                t = torch.softmax(t, dim=-1) if t.dim() else torch.ones_like(t)
        else:
            t.uniform_(low, high, generator=gen)
        if not dtype.is_floating_point:
            t = t.round()
    return t.to(dtype)


_generators: dict[tuple[str, int, int], Callable] = {}


def load_generator(task: Task) -> Callable:
    """The function ``[inputs] generator`` names, imported once per version of its file."""
    file, func = task.contract.input_generator
    path = (task.root / file).resolve()
    try:
        st = path.stat()
    except OSError:
        raise InputsError(f"{task.root / 'contract.toml'}: inputs.generator names {file}, which does not exist") from None
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _generators:
        name = f"kc_task_inputs_{hashlib.sha256(str(key).encode()).hexdigest()[:12]}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.parent))  # the generator may import its task's helper modules
        try:
            spec.loader.exec_module(module)  # trusted task code, like the reference
        finally:
            sys.path.remove(str(path.parent))
        fn = getattr(module, func, None)
        if not callable(fn):
            raise InputsError(f"{path}: defines no function {func!r} (contract.toml inputs.generator)")
        _generators[key] = fn
    return _generators[key]


def _generated(task: Task, workload: Workload, axes: dict[str, int], device: str, wseed: int) -> list[Any]:
    d = task.definition
    file, func = task.contract.input_generator
    where = f"the task's input generator {file}::{func}"
    out = load_generator(task)(dict(axes), device, wseed)
    out = list(out) if isinstance(out, list | tuple) else out
    if not isinstance(out, list) or len(out) != len(d.inputs):
        got = f"{len(out)} items" if isinstance(out, list) else type(out).__name__
        raise InputsError(f"{where} returned {got}; the definition has {len(d.inputs)} inputs {list(d.inputs)}")
    args: list[Any] = []
    for (name, spec), value in zip(d.inputs.items(), out, strict=True):
        source = workload.inputs.get(name)
        if source is not None and source.type in ("scalar", "safetensors"):
            args.append(None)  # filled from the workload below
            continue
        shape, dtype = d.shape(spec, axes), torch_dtype(spec.dtype)
        if value is None:
            raise InputsError(f"{where} returned None for input {name!r}, which the workload does not give")
        if shape is None:
            if isinstance(value, torch.Tensor):
                value = value.item()
            if not isinstance(value, bool | int | float):
                raise InputsError(f"{where}: input {name!r} is a scalar; got {type(value).__name__}")
            args.append(value)
            continue
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape or value.dtype != dtype:
            got = f"{tuple(value.shape)} {value.dtype}" if isinstance(value, torch.Tensor) else type(value).__name__
            raise InputsError(f"{where}: input {name!r} is {got}; the definition says {shape} {dtype} at {axes}")
        args.append(value if value.device.type == torch.device(device).type else value.to(device))
    return args


def _draw_order(task: Task) -> list[str]:
    """Inputs in an order where an offsets input comes after the one it lies ``within``."""
    dists = task.contract.input_dists
    order, seen = [], set()

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in seen:
            return
        other = dists[name].within if name in dists else None
        if other is not None:
            if other in stack:
                raise InputsError(f"contract.toml: inputs.{name}.within makes a cycle ({' -> '.join((*stack, other))})")
            visit(other, (*stack, name))
        seen.add(name)
        order.append(name)

    for name in task.definition.inputs:
        visit(name, (name,))
    return order


def make_inputs(task: Task, workload: Workload, seed: int, device: str) -> list[Any]:
    """The positional arguments of ``run`` for this workload, in the definition's input order."""
    d = task.definition
    axes = d.axis_values(workload.axes)
    wseed = workload_seed(seed, workload.uuid)
    files = _SafetensorFiles(task.root, device)
    if task.contract.input_generator is not None:
        values = dict(zip(d.inputs, _generated(task, workload, axes, device, wseed), strict=True))
    else:
        values = {}
        gen = torch.Generator(device=device)
        gen.manual_seed(wseed)
        # offsets are drawn on the CPU (randperm, searchsorted) from a CPU generator of the same seed
        cpu_gen = gen if torch.device(device).type == "cpu" else torch.Generator().manual_seed(wseed)
        dists = task.contract.input_dists
        for name in _draw_order(task):
            spec, source = d.inputs[name], workload.inputs.get(name)
            if source is not None and source.type in ("scalar", "safetensors"):
                continue
            dtype, shape = torch_dtype(spec.dtype), d.shape(spec, axes)
            dist = dists.get(name) or _default_dist(dtype)
            bound = values[dist.within] if dist.dist == "offsets" and dist.within else None
            t = _draw(name, shape or (), dtype, dist, cpu_gen if dist.dist == "offsets" else gen, device, axes, bound)
            values[name] = t.item() if shape is None else t
    args: list[Any] = []
    for name, spec in d.inputs.items():
        source = workload.inputs.get(name)
        if source is not None and source.type == "scalar":
            args.append(source.value)
        elif source is not None and source.type == "safetensors":
            args.append(files.load(source.path, source.tensor_key, name, d.shape(spec, axes), torch_dtype(spec.dtype)))
        else:
            args.append(values[name])
    try:
        broken = d.violated_value_constraints(axes, args)
    except ValueError as e:
        raise InputsError(f"workload {workload.uuid}: a constraint over the inputs cannot be evaluated: {e}") from None
    if broken:
        raise InputsError(f"workload {workload.uuid}: the inputs violate the definition's constraint(s) {broken} "
                          "(a safetensors blob that does not fit, or a random input whose contract.toml "
                          "[inputs.<name>] distribution cannot satisfy them, e.g. dist = \"offsets\" for an indptr)")
    return args


def infeasible(task: Task, axes: dict[str, int]) -> str:
    """Why inputs cannot be drawn at these axis values ("" when they can): an offsets total that does
    not fit its segments or the offsets it lies within. Holdout shapes are checked with this."""
    d = task.definition
    values = d.axis_values(axes)
    dists = task.contract.input_dists
    totals: dict[str, int] = {}
    try:
        for name, dist in dists.items():
            if dist.dist == "offsets" and name in d.inputs:
                totals[name] = _total(dist, values)
    except ValueError as e:
        return str(e)
    for name, total in totals.items():
        shape = d.shape(d.inputs[name], values)
        if total < 0 or not shape or shape[0] < 1 or (shape[0] == 1 and total):
            return f"input {name!r}: no offsets of shape {shape} end at {total}"
        other = dists[name].within
        if other in totals and total > totals[other]:
            return f"input {name!r}: total {total} exceeds {other}'s {totals[other]}"
    return ""


class _SafetensorFiles:
    """One open mapping per safetensors file for one call of make_inputs, however many of its tensors
    the workload names (a model's hundreds of parameters used to map the file once each)."""

    def __init__(self, root: Path, device: str):
        self.root, self.device = root, device
        self.handles: dict[Path, Any] = {}

    def load(self, path: str, key: str, name: str, shape, dtype) -> torch.Tensor:
        from safetensors import safe_open

        p = Path(path) if Path(path).is_absolute() else self.root / path
        if p not in self.handles:
            self.handles[p] = safe_open(str(p), framework="pt", device="cpu")
        f = self.handles[p]
        if key not in f.keys():
            raise InputsError(f"input {name!r}: {p} has no tensor {key!r} (has {sorted(f.keys())[:10]})")
        t = f.get_tensor(key)
        if shape is not None and tuple(t.shape) != shape:
            raise InputsError(f"input {name!r}: {p}[{key}] has shape {tuple(t.shape)}, the definition needs {shape}")
        if t.dtype != dtype:
            raise InputsError(f"input {name!r}: {p}[{key}] is {t.dtype}, the definition needs {dtype}")
        return t.to(self.device)
