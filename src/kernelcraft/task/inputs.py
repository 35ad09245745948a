"""Make the inputs of one workload, on one device, from one seed (the judge's job: trusted code only).

Distributions of ``random`` inputs (documented defaults; ``[inputs.<name>]`` in contract.toml
overrides; ``low``/``high``/``total`` may be expressions over axis names, e.g. ``high = "vocab_size"``):

- Floats: N(0, 1) drawn in float32 and rounded to the dtype.
- Integers: int8 randint[-128, 128); other signed ints randint[-1024, 1024); uint8 randint[0, 256);
  bool randint[0, 2) (FlashInfer-Bench's choices).
- ``softmax`` and ``offsets`` make probabilities and non-decreasing offsets (``[batch + 1]``, 0 to
  ``total``, optionally ``within`` another offsets input), see :mod:`kernelcraft.task.contract`.
- Where the definition's constraints bound an input's values in terms of axes (``h >= 0``,
  ``0 <= h < 16``, ``idx.max() < num_pages``: :mod:`kernelcraft.task.constraints`), the default
  keeps to them: integers randint over the allowed range (a missing side from the dtype's default),
  floats uniform between two bounds, or N(0, 1) folded onto the allowed side of one bound.
- A random input with ``shape: null`` is a Python scalar drawn the same way.

**Stress variant** (``variant="stress"``, and every workload whose uuid starts with ``stress-``):
each floating random tensor input (not ``softmax``) is drawn as above, then

- about half of its rows (at least one; a row is the last dimension) get 1-4 entries at
  ``mean +- m * std`` with ``m`` log-uniform in ``outlier_magnitude`` (default [100, 1000]: LLM
  activation outliers), the first of each row from the upper half of that range (so every outlier
  row holds one above sqrt(100 * 1000) ~ 316, past fp16's square root of its largest finite value);
  magnitudes stay under a quarter of the dtype's largest finite value (float8);
- about one row in eight (at least one when there are two or more) is scaled by 1e-6 to 1e-3, and
  the first such row of a tensor with eight or more rows is exactly zero (a 1-D tensor is one row:
  outliers only);
- the result is clamped into the input's domain: a contract's uniform [low, high] and the
  definition's bounds (outliers of a bounded input become its extreme values); near-zero rows are
  skipped where zero is outside the domain.

``[inputs.<name>] outliers = false`` / ``near_zero_rows = false`` turn either off for one input;
integer, bool, scalar, workload-given and safetensors inputs are never changed.

**The task's own generator** (``[inputs] generator`` in contract.toml, a function of the task folder:
a KDA request's ``benchmark.py::random_inputs``, a KernelBench problem's ``get_inputs()`` wrapped in
``inputs.py``; :mod:`kernelcraft.task.generated`) replaces all of the above, stress variant included:
the task's own in-domain inputs. Scalar and safetensors inputs still come from the workload.

Every workload gets its own generator seeded from (run seed, workload uuid), so one workload can be
replayed alone with the same ``--seed`` and its inputs do not depend on which others ran. Every value
constraint of the definition (``num_kv_indices == kv_indptr[-1].item()``, ``0 <= h < 16``) is checked
on the inputs made, drawn or generated; inputs that break one (a safetensors blob that does not fit, a
contract distribution that contradicts it, a relation independent draws cannot meet, a generator out
of its domain) raise :class:`InputsError` naming it and the fix, never a silent pass.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import torch

from kernelcraft.task.constraints import Bounds, input_bounds, violated_values
from kernelcraft.task.contract import InputDistribution
from kernelcraft.task.dtypes import torch_dtype
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload

STRESS_PREFIX = "stress-"
_MAX_OUTLIERS_PER_ROW = 4


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


def resolve_distribution(task: Task, name: str, dtype: torch.dtype, axes: dict[str, int]) -> tuple[InputDistribution, Bounds]:
    """The distribution an input is drawn from and the definition's bounds on its values."""
    bounds = input_bounds(task.definition, name, axes) if dtype != torch.bool else Bounds()
    given = task.contract.inputs.get(name)
    default = _default_dist(dtype)
    if given is not None and given.dist is not None:
        return given, bounds
    flags = given.model_dump(include={"outliers", "near_zero_rows", "outlier_magnitude"}) if given else {}
    if not bounds or dtype == torch.bool:
        return default.model_copy(update=flags), bounds
    if not dtype.is_floating_point:
        low, high = bounds.int_range()
        dlow, dhigh = default.bounds(axes)
        if low is None:
            low = min(int(dlow), high - 1)
        if high is None:
            high = max(int(dhigh), low + 1)
        info = torch.iinfo(dtype)
        low, high = max(low, info.min), min(high, info.max + 1)
        return InputDistribution(dist="randint", low=low, high=high, **flags), bounds
    if bounds.low is not None and bounds.high is not None:
        return InputDistribution(dist="uniform", low=bounds.low, high=bounds.high, **flags), bounds
    mean = bounds.low if bounds.low is not None else bounds.high
    return InputDistribution(dist="normal", mean=mean, std=1.0, **flags), bounds  # folded by _domain


def _ceil_to(value: float, dtype: torch.dtype, strict: bool) -> float:
    """The smallest value of ``dtype`` at least (``strict``: greater than) ``value``: float32 draws
    clamped to it cannot round past the bound (rounding to nearest is monotone)."""
    if math.isinf(value):
        return value
    c = float(torch.tensor(value, dtype=torch.float64).to(dtype))
    step = max(abs(value), torch.finfo(dtype).tiny) * torch.finfo(dtype).eps
    while c < value or (strict and c == value):
        c = float(torch.tensor(c + step, dtype=torch.float64).to(dtype))
        step *= 2
    return c


def _domain(dist: InputDistribution, bounds: Bounds, dtype: torch.dtype, axes: dict[str, int]) -> tuple[float, float]:
    """Closed [low, high] every element must lie in: the distribution's support within the bounds,
    as values of ``dtype``."""
    lo, hi = -math.inf, math.inf
    lo_strict = hi_strict = False
    if dist.dist == "uniform":
        lo, hi = dist.bounds(axes)
    if bounds.low is not None and bounds.low >= lo:
        lo, lo_strict = bounds.low, bounds.low_strict
    if bounds.high is not None and bounds.high <= hi:
        hi, hi_strict = bounds.high, bounds.high_strict
    return _ceil_to(lo, dtype, lo_strict), -_ceil_to(-hi, dtype, hi_strict)


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


def _draw(shape: tuple[int, ...], dtype: torch.dtype, dist: InputDistribution, gen: torch.Generator, device: str,
          axes: dict[str, int], domain: tuple[float, float] | None = None) -> torch.Tensor:
    """Float32 draws (int64 for randint), not yet rounded to ``dtype``. Offsets: see :func:`_offsets`."""
    low, high = dist.bounds(axes)
    if dist.dist == "randint":
        return torch.randint(int(low), int(high), shape, generator=gen, device=device, dtype=torch.int64)
    t = torch.empty(shape, dtype=torch.float32, device=device)
    if dist.dist in ("normal", "softmax"):
        t.normal_(dist.mean, dist.std, generator=gen)
        if dist.dist == "softmax":  # probabilities over the last dim (a sampler's probs)
            return torch.softmax(t, dim=-1) if t.dim() else torch.ones_like(t)
    else:
        t.uniform_(low, high, generator=gen)
    if domain is not None and dtype.is_floating_point:
        lo, hi = domain
        # a one-sided bound folds the normal onto its allowed side
        if lo > -math.inf and hi == math.inf:
            t = torch.where(t < lo, 2 * lo - t, t)
        elif hi < math.inf and lo == -math.inf:
            t = torch.where(t > hi, 2 * hi - t, t)
    if not dtype.is_floating_point:
        t = t.round()
    return t


def _stress(t: torch.Tensor, dtype: torch.dtype, dist: InputDistribution, domain: tuple[float, float],
            gen: torch.Generator) -> torch.Tensor:
    """Outliers and near-zero rows on a float32 draw (see the module docstring)."""
    if t.dim() == 0 or t.numel() == 0:
        return t
    device = t.device
    cols = t.shape[-1]
    rows = t.reshape(-1, cols).clone()
    n = rows.shape[0]
    u = torch.rand(n, generator=gen, device=device)
    lo, hi = domain
    near = (u < 0.125) if (dist.near_zero_rows and n >= 2 and lo <= 0 <= hi) else torch.zeros_like(u, dtype=torch.bool)
    out = (u >= 0.5) if dist.outliers else torch.zeros_like(u, dtype=torch.bool)
    if dist.outliers and not bool(out.any()):
        out[int(u.argmax())] = True
    if near.numel() and dist.near_zero_rows and n >= 2 and lo <= 0 <= hi and not bool(near.any()):
        near[int(u.argmin())] = True
    near &= ~out
    if bool(near.any()):
        scale = 10.0 ** (-6.0 + 3.0 * torch.rand(n, generator=gen, device=device))
        if n >= 8:  # an exact zero row: the 0 / 0 of a norm or a quantization scale
            scale[int(near.nonzero()[0])] = 0.0
        rows = torch.where(near[:, None], rows * scale[:, None], rows)
    if bool(out.any()):
        k_max = min(_MAX_OUTLIERS_PER_ROW, cols)
        pos = torch.randint(cols, (n, k_max), generator=gen, device=device)
        frac = torch.rand((n, k_max), generator=gen, device=device)
        frac[:, 0] = 0.5 + 0.5 * frac[:, 0]  # the first outlier of a row from the upper half (log scale)
        m_lo, m_hi = dist.outlier_magnitude
        # the draw is float32 whatever the input's dtype: a float64 input's own max does not fit it
        cap = min(torch.finfo(dtype).max, torch.finfo(rows.dtype).max) / 4
        mag = (m_lo * (m_hi / m_lo) ** frac * (dist.std if dist.dist == "normal" else 1.0)).clamp(max=cap)
        sign = torch.randint(2, (n, k_max), generator=gen, device=device) * 2 - 1
        center = dist.mean if dist.dist == "normal" else 0.0
        count = torch.randint(1, k_max + 1, (n,), generator=gen, device=device)
        use = (torch.arange(k_max, device=device)[None, :] < count[:, None]) & out[:, None]
        r, j = use.nonzero(as_tuple=True)
        rows[r, pos[r, j]] = (center + sign * mag)[r, j].to(rows.dtype)
    return rows.clamp(lo, hi).reshape(t.shape)


def _draw_order(task: Task) -> list[str]:
    """Inputs in an order where an offsets input comes after the one it lies ``within``."""
    dists = task.contract.inputs
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


def make_inputs(task: Task, workload: Workload, seed: int, device: str, variant: str | None = None) -> list[Any]:
    """The positional arguments of ``run`` for this workload, in the definition's input order.

    ``variant``: "normal" or "stress" (outliers and near-zero rows, see the module docstring);
    None: "stress" for a workload whose uuid starts with ``stress-``, else "normal". A task with its
    own ``[inputs] generator`` makes every random input with it, whatever the variant."""
    if variant is None:
        variant = "stress" if workload.uuid.startswith(STRESS_PREFIX) else "normal"
    if variant not in ("normal", "stress"):
        raise ValueError(f"unknown input variant {variant!r} (use 'normal' or 'stress')")
    if task.contract.input_generator.generator is not None:
        from kernelcraft.task.generated import generated_inputs

        return generated_inputs(task, workload, seed, device)  # checked by check_values there
    d = task.definition
    axes = d.axis_values(workload.axes)
    wseed = workload_seed(seed, workload.uuid)
    gen = torch.Generator(device=device)
    gen.manual_seed(wseed)
    # offsets are drawn on the CPU (randperm, searchsorted) from a CPU generator of the same seed
    cpu_gen = gen if torch.device(device).type == "cpu" else torch.Generator().manual_seed(wseed)
    values: dict[str, Any] = {}
    for name in _draw_order(task):
        spec, source = d.inputs[name], workload.inputs.get(name)
        if source is not None and source.type in ("scalar", "safetensors"):
            continue
        dtype, shape = torch_dtype(spec.dtype), d.shape(spec, axes)
        dist, bounds = resolve_distribution(task, name, dtype, axes)
        if dist.dist == "offsets":
            if dist.within and dist.within not in values:
                raise InputsError(f"input {name!r} is drawn within {dist.within!r}, which workload {workload.uuid} "
                                  "gives itself: draw both, or give both in the workload")
            bound = values[dist.within] if dist.within else None
            values[name] = _offsets(name, shape or (), dist, cpu_gen, axes, bound).to(device=device, dtype=dtype)
            continue
        domain = _domain(dist, bounds, dtype, axes) if dtype.is_floating_point else None
        derived = name not in task.contract.inputs or task.contract.inputs[name].dist is None
        t = _draw(shape or (), dtype, dist, gen, device, axes, domain if derived else None)
        if domain is not None:
            t = t.float()  # a float input drawn by randint
            if variant == "stress" and shape and dist.dist != "softmax" and (dist.outliers or dist.near_zero_rows):
                t = _stress(t, dtype, dist, domain, gen)
            elif bounds and derived:
                # the defaults keep to the definition's bounds; a contract's own distribution that
                # breaks them is reported below, not silently clamped
                t = t.clamp(*domain)
        t = t.to(dtype)
        values[name] = t.item() if shape is None else t
    args = with_workload_inputs(task, workload, device, values)
    check_values(task, workload, args, "drawn")
    return args


def with_workload_inputs(task: Task, workload: Workload, device: str, values: dict[str, Any]) -> list[Any]:
    """The inputs in definition order: the workload's scalar and safetensors inputs, ``values`` for the rest."""
    d = task.definition
    axes = d.axis_values(workload.axes)
    files = _SafetensorFiles(task.root, device)
    args: list[Any] = []
    for name, spec in d.inputs.items():
        source = workload.inputs.get(name)
        if source is not None and source.type == "scalar":
            args.append(source.value)
        elif source is not None and source.type == "safetensors":
            args.append(files.load(source.path, source.tensor_key, name, d.shape(spec, axes), torch_dtype(spec.dtype)))
        else:
            args.append(values[name])
    return args


def check_values(task: Task, workload: Workload, args: list[Any], how: str, fix: str = "") -> None:
    """InputsError unless ``args`` (definition order) meet every value constraint of the definition."""
    d = task.definition
    broken = violated_values(d, d.axis_values(workload.axes), dict(zip(d.inputs, args, strict=True)))
    if broken:
        fix = fix or (f"give the inputs named there a distribution that meets them in {task.root / 'contract.toml'} "
                      "[inputs.<name>] (dist = \"offsets\" for an indptr), or fixed values in the workload; a "
                      "safetensors blob of the workload may not fit them")
        raise InputsError(f"workload {workload.uuid}: the inputs {how} violate the definition's constraint(s) "
                          f"{broken} ({task.root / 'definition.json'}): {fix}")


def infeasible(task: Task, axes: dict[str, int]) -> str:
    """Why inputs cannot be drawn at these axis values ("" when they can): an offsets total that does
    not fit its segments or the offsets it lies within. Holdout shapes are checked with this."""
    d = task.definition
    values = d.axis_values(axes)
    dists = task.contract.inputs
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
