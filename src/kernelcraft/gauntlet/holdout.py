"""Gate 4, generalization: holdout shapes the candidate's author never saw, and stress inputs.

**Drawn shapes** (``[generalization] holdouts``, default 3), from the run's secret seed, over the
whole range the definition's constraints allow (:func:`kernelcraft.task.constraints.axis_bounds`;
an axis with no upper bound goes as far as ``max_bytes``). Each holdout starts from a workload and
changes its var axes, several at once where there are several (every third holdout changes one, so
a failure there names its axis); axes an equality defines (``two_i == 2 * intermediate_size``,
``nf == nx // 2 + 1``) are computed from the others, never drawn. Where a value lands:

- holdout 0: above the largest value any workload has, up to what ``max_bytes`` allows;
- holdout 1: strictly between two adjacent workload values of the axis (``4096 < w < 32000``);
- the others: a power of two or a neighbour (2^k - 1, 2^k, 2^k + 1), log-uniform over the range,
  a small size (<= 17), above the largest, or between two workloads, at random.

Each changed value is also given a residue class: over holdouts 0 and 1 an axis is once *odd* and
once *even but no multiple of 16* (in a seed-shuffled order), later ones are unconstrained; so a
kernel wrong for odd tails, or for even sizes its 16-wide vector path does not cover, fails here.
A draw over ``max_bytes`` is shrunk (the axis grown most over its workload halved) until it fits;
a draw that breaks a constraint or repeats a workload is drawn again. Plus the contract's fixed
``[generalization] shapes``. uuids start with ``holdout-`` (the verdict names the class by it).

**Stress workloads** (``[generalization] stress``, default 2): the first workload and the largest
again, with the stress variant of their inputs (outliers, near-zero rows:
:mod:`kernelcraft.task.inputs`); uuids start with ``stress-``.

**Past 2^31 elements** (:func:`large_holdout`): the cheapest shape within the constraints where one
tensor has more than 2^31 elements (int32 offsets overflow), if the check's memory fits a budget.
"""

from __future__ import annotations

import math
import random

from kernelcraft.task.constraints import axis_bounds, derived_axes
from kernelcraft.task.definition import eval_expression, expression_names
from kernelcraft.task.dtypes import torch_dtype
from kernelcraft.task.inputs import STRESS_PREFIX
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload

_ATTEMPTS = 40  # draws per holdout before giving up on it (constraints that reject most draws)
_SEARCH_CAP = 1 << 40  # largest axis value tried where nothing else bounds an axis
INT32_ELEMENTS = 1 << 31


def _valid(task: Task, axes: dict[str, int]) -> bool:
    """Inside the definition's constraints, and inputs can be drawn there (an offsets total that fits)."""
    from kernelcraft.task.inputs import infeasible

    try:
        return not task.definition.violated_constraints(task.definition.axis_values(axes)) and not infeasible(task, axes)
    except (ValueError, ZeroDivisionError):
        return False


def _template_inputs(task: Task) -> dict:
    """The first workload's scalar values, and safetensors inputs whose shape has no var axis;
    everything else is drawn at random for the new shape."""
    d = task.definition
    keep = {}
    for name, spec in task.workloads[0].inputs.items():
        shape = d.inputs[name].shape or []
        if spec.type == "scalar" or (spec.type == "safetensors" and all(d.axes[a].type == "const" for a in shape)):
            keep[name] = spec
    return keep


class _Space:
    """The task's var axes: which are drawn, which derived, their ranges and workload values."""

    def __init__(self, task: Task, max_bytes: int):
        d = task.definition
        self.task, self.max_bytes = task, max_bytes
        self.derived = derived_axes(d)
        self.free = [a for a in d.var_axes if a not in self.derived]
        self.bounds = axis_bounds(d)
        self.seen = {a: sorted({w.axes[a] for w in task.workloads if a in w.axes}) for a in self.free}

    def complete(self, axes: dict[str, int]) -> dict[str, int] | None:
        """``axes`` with the derived axes computed; None where one cannot be (not an integer >= 0)."""
        out = dict(axes)
        values = self.task.definition.axis_values(out)
        for axis, expr in self.derived.items():
            try:
                v = eval_expression(expr, values)
            except (ValueError, ZeroDivisionError, OverflowError):
                return None
            if v != int(v) or v < 0:
                return None
            out[axis] = values[axis] = int(v)
        return out

    def fits(self, axes: dict[str, int]) -> bool:
        full = self.complete(axes)
        return full is not None and self.task.io_bytes(full) <= self.max_bytes

    def upper(self, axis: str, base: dict[str, int]) -> int:
        """The largest value of ``axis`` within its bounds and ``max_bytes``, the others as in ``base``."""
        lo, hi = self.bounds[axis]
        top = hi if hi is not None else _SEARCH_CAP
        if self.fits({**base, axis: top}):
            return top
        if not self.fits({**base, axis: lo}):
            return lo - 1
        good, bad = lo, top  # bytes grow with every axis: bisect
        while bad - good > 1:
            mid = (good + bad) // 2
            good, bad = (mid, bad) if self.fits({**base, axis: mid}) else (good, mid)
        return good


def _in_class(v: int, cls: str) -> bool:
    if cls == "odd":
        return v % 2 == 1
    if cls == "even":
        return v % 2 == 0 and v % 16 != 0
    return True


def _snap(v: int, cls: str, lo: int, hi: int) -> int | None:
    """The value nearest ``v`` in [lo, hi] of residue class ``cls``; None if there is none."""
    for delta in range(0, 17):
        for c in (v - delta, v + delta) if delta else (v,):
            if lo <= c <= hi and _in_class(c, cls):
                return c
    return None


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    if hi <= lo:
        return lo
    return min(hi, max(lo, round(math.exp(rng.uniform(math.log(max(lo, 1)), math.log(hi + 1))) - 0.5)))


def _value(rng: random.Random, kind: str, cls: str, seen: list[int], lo: int, hi: int) -> int | None:
    """One axis value of ``kind`` and residue class ``cls`` in [lo, hi]."""
    if hi < lo:
        return None
    if kind == "between":
        gaps = [(a, b) for a, b in zip(seen, seen[1:], strict=False) if b - a >= 2 and a + 1 <= hi and b - 1 >= lo]
        if gaps:
            a, b = rng.choice(gaps)
            inner_lo, inner_hi = max(a + 1, lo), min(b - 1, hi)
            v = _snap(_log_uniform(rng, inner_lo, inner_hi), cls, inner_lo, inner_hi)
            if v is not None:
                return v
        kind = "log"
    if kind == "above":
        start = max((seen[-1] + 1) if seen else lo, lo)
        if start <= hi:
            # half the time the largest value that fits, else log-uniform above the largest seen
            v = hi if rng.random() < 0.5 else _log_uniform(rng, start, hi)
            v = _snap(v, cls, start, hi)
            if v is not None:
                return v
        kind = "log"
    if kind == "pow2":
        ks = [k for k in range(0, 41) if lo <= (1 << k) <= hi + 1]
        if ks:
            p = 1 << rng.choice(ks)
            options = {"odd": [p - 1, p + 1], "even": [p - 2, p + 2] if p >= 16 else [p], "any": [p - 1, p, p + 1]}
            choices = [c for c in options[cls] if lo <= c <= hi and _in_class(c, cls)]
            if choices:
                return rng.choice(choices)
        kind = "log"
    if kind == "small":
        v = _snap(rng.randint(lo, min(hi, max(lo, 17))), cls, lo, min(hi, max(lo, 17)))
        if v is not None:
            return v
    return _snap(_log_uniform(rng, lo, hi), cls, lo, hi)


_KINDS = ("pow2", "log", "small", "above", "between")


def _plan(i: int, rng: random.Random, classes: dict[str, list[str]], axis: str) -> tuple[str, str]:
    """(kind, residue class) of axis ``axis`` in holdout ``i``."""
    kind = "above" if i == 0 else "between" if i == 1 else rng.choice(_KINDS)
    cls = classes[axis][i] if i < 2 else rng.choice(("odd", "even", "any"))
    return kind, cls


def _shrink(space: _Space, axes: dict[str, int], base: dict[str, int], changed: list[str],
            classes: dict[str, str]) -> dict[str, int] | None:
    """Halve the changed axis grown most over its workload value until the draw fits ``max_bytes``."""
    axes = dict(axes)
    for _ in range(200):
        if space.fits(axes):
            return axes
        movable = [a for a in changed if axes[a] > space.bounds[a][0]]
        if not movable:
            return None
        a = max(movable, key=lambda n: axes[n] / max(base[n], 1))
        lo = space.bounds[a][0]
        half = max(lo, axes[a] // 2)
        axes[a] = _snap(half, classes[a], lo, half) or half
    return None


def drawn_holdouts(task: Task, seed: int, max_bytes: int, count: int) -> list[dict[str, int]]:
    """``count`` var-axis assignments (derived axes included), none equal to a workload's."""
    space = _Space(task, max_bytes)
    if not space.free or count == 0 or not task.workloads:
        return []
    rng = random.Random(seed ^ 0x686F6C646F7574)
    # odd and even-not-a-multiple-of-16 once each over holdouts 0 and 1, per axis, order shuffled
    classes = {a: rng.sample(["odd", "even"], 2) for a in space.free}
    taken = {tuple(sorted(w.axes.items())) for w in task.workloads}
    out: list[dict[str, int]] = []
    for i in range(count):
        for _ in range(_ATTEMPTS):
            base = dict(rng.choice(task.workloads).axes)
            if len(space.free) == 1 or i % 3 == 2:
                changed = [rng.choice(space.free)]
            else:
                changed = rng.sample(space.free, rng.randint(2, len(space.free)))
            axes, cls_of = dict(base), {}
            for axis in rng.sample(changed, len(changed)):
                kind, cls = _plan(i, rng, classes, axis)
                lo = space.bounds[axis][0]
                v = _value(rng, kind, cls, space.seen[axis], lo, space.upper(axis, base))
                if v is None:
                    break
                axes[axis], cls_of[axis] = v, cls
            else:
                fitted = _shrink(space, axes, base, changed, cls_of)
                full = fitted and space.complete(fitted)
                key = full and tuple(sorted(full.items()))
                if full and key not in taken and _valid(task, full):
                    taken.add(key)
                    out.append(full)
                    break
    return out


def holdout_workloads(task: Task, seed: int, max_bytes: int) -> list[Workload]:
    """The contract's fixed shapes, then the drawn holdouts (see the module docstring)."""
    out: list[Workload] = []
    template = _template_inputs(task)
    for i, shape in enumerate(task.contract.generalization.shapes):
        out.append(Workload(uuid=f"holdout-fixed-{i}", axes=shape, inputs=template))
    for i, axes in enumerate(drawn_holdouts(task, seed, max_bytes, task.contract.generalization.holdouts)):
        out.append(Workload(uuid=f"holdout-{i}", axes=axes, inputs=template))
    return out


def stress_workloads(task: Task, workloads: list[Workload]) -> list[Workload]:
    """``[generalization] stress`` of ``workloads`` (the first, then the largest, then the next
    largest...) again, under ``stress-`` uuids: their inputs get outliers and near-zero rows."""
    count = task.contract.generalization.stress
    if count == 0 or not workloads or not _has_stress_input(task):
        return []
    picked = [workloads[0]]
    for w in sorted(workloads[1:], key=lambda w: task.io_bytes(w.axes), reverse=True):
        if len(picked) >= count:
            break
        picked.append(w)
    return [w.model_copy(update={"uuid": f"{STRESS_PREFIX}{i}-{w.uuid[:8]}"}) for i, w in enumerate(picked[:count])]


def _has_stress_input(task: Task) -> bool:
    d = task.definition
    for name, spec in d.inputs.items():
        given = task.contract.inputs.get(name)
        if spec.shape and torch_dtype(spec.dtype).is_floating_point and (
                given is None or given.outliers or given.near_zero_rows):
            return True
    return False


def check_bytes(task: Task, axes: dict[str, int]) -> int:
    """What one correctness check holds on the device at these axes, roughly: inputs and outputs
    twice (the pristine copy and the candidate's two calls), plus the float64 reference's copy of
    every floating input (8 bytes an element), one float64 temporary of the same size, and its
    float64 outputs."""
    d = task.definition
    full = d.axis_values(axes)
    total = 2 * task.io_bytes(axes)
    for group, per in ((d.inputs, 16), (d.outputs, 8)):
        for spec in group.values():
            shape = d.shape(spec, full)
            if shape is not None and torch_dtype(spec.dtype).is_floating_point:
                total += per * math.prod(shape)
    return total


def large_holdout(task: Task, max_bytes: int, min_elements: int = INT32_ELEMENTS) -> Workload | None:
    """The cheapest shape (by :func:`check_bytes`) within the constraints where one tensor has more
    than ``min_elements`` elements and the check fits ``max_bytes``; None where there is none. Each
    candidate starts from a workload, optionally with one other axis at its upper bound, and raises
    one axis of that tensor to the least (odd) value that passes ``min_elements``. The caller
    decides where to run it (a GPU: the CPU interpreter would take hours)."""
    space = _Space(task, _SEARCH_CAP * _SEARCH_CAP)
    d = task.definition
    tensors = [s for s in [*d.inputs.values(), *d.outputs.values()] if s.shape]
    best: tuple[int, dict[str, int]] | None = None
    starts = []
    for w in task.workloads:
        starts.append(dict(w.axes))
        for a in space.free:
            if space.bounds[a][1] is not None:
                starts.append({**w.axes, a: space.bounds[a][1]})
    for base in starts:
        if space.complete(base) is None:
            continue
        for spec in tensors:
            for axis in space.free:
                # the axis must reach the tensor's shape, itself or through a derived axis
                reaches = {axis} | {n for n, e in space.derived.items() if axis in expression_names(e)}
                if not reaches & set(spec.shape):
                    continue
                v = _least_over(space, spec, base, axis, min_elements)
                cand = None if v is None else space.complete({**base, axis: v})
                if cand is None or not _valid(task, cand):
                    continue
                cost = check_bytes(task, cand)
                if cost <= max_bytes and (best is None or cost < best[0]):
                    best = (cost, cand)
    if best is None:
        return None
    return Workload(uuid="holdout-int32-overflow", axes=best[1], inputs=_template_inputs(task))


def _least_over(space: _Space, spec, base: dict[str, int], axis: str, min_elements: int) -> int | None:
    """The least odd value of ``axis`` (from its base value up) where ``spec`` has more than
    ``min_elements`` elements; None if its upper bound does not reach it."""
    d = space.task.definition
    lo, hi = space.bounds[axis]
    top = hi if hi is not None else _SEARCH_CAP

    def numel(v: int) -> int:
        full = space.complete({**base, axis: v})
        return 0 if full is None else math.prod(d.shape(spec, d.axis_values(full)))

    if numel(top) <= min_elements:
        return None
    good, bad = max(lo, base.get(axis, lo)) - 1, top  # numel(bad) > min_elements
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if numel(mid) <= min_elements else (good, mid)
    v = bad | 1  # odd: the overflow does not land on a power-of-two boundary
    return v if v <= top and numel(v) > min_elements else bad
