"""Make the inputs of one workload, on one device, from one seed.

Distributions of ``random`` inputs (documented defaults; ``[inputs.<name>]`` in contract.toml
overrides; ``low``/``high`` may be expressions over axis names, e.g. ``high = "vocab_size"``): floats N(0, 1) drawn in float32 and rounded to the dtype; int8 randint[-128, 128);
other signed ints randint[-1024, 1024); uint8 randint[0, 256); bool randint[0, 2). A random input
with ``shape: null`` is a Python scalar drawn the same way.

``[inputs] generator`` in contract.toml (a function of the task folder, :mod:`kernelcraft.task.generated`)
replaces all of this: the request's own in-domain inputs.

Every workload gets its own generator seeded from (run seed, workload uuid), so one workload can be
replayed alone with the same ``--seed`` and its inputs do not depend on which others ran.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch

from kernelcraft.task.contract import InputDistribution
from kernelcraft.task.dtypes import torch_dtype
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload


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


def _draw(shape: tuple[int, ...], dtype: torch.dtype, dist: InputDistribution, gen: torch.Generator, device: str,
          axes: dict[str, int]) -> torch.Tensor:
    low, high = dist.bounds(axes)
    if dist.dist == "randint":
        t = torch.randint(int(low), int(high), shape, generator=gen, device=device, dtype=torch.int64)
    else:
        t = torch.empty(shape, dtype=torch.float32, device=device)
        if dist.dist == "normal":
            t.normal_(dist.mean, dist.std, generator=gen)
        else:
            t.uniform_(low, high, generator=gen)
        if not dtype.is_floating_point:
            t = t.round()
    return t.to(dtype)


def make_inputs(task: Task, workload: Workload, seed: int, device: str) -> list[Any]:
    """The positional arguments of ``run`` for this workload, in the definition's input order."""
    # -- hook (issue 22): a request's own generator replaces the distributions below entirely
    if task.contract.input_generator.generator is not None:
        from kernelcraft.task.generated import generated_inputs

        return generated_inputs(task, workload, seed, device)
    # -- end of hook
    d = task.definition
    axes = d.axis_values(workload.axes)
    gen = torch.Generator(device=device)
    gen.manual_seed(workload_seed(seed, workload.uuid))
    args: list[Any] = []
    for name, spec in d.inputs.items():
        dtype = torch_dtype(spec.dtype)
        shape = d.shape(spec, axes)
        source = workload.inputs.get(name)
        if source is not None and source.type == "scalar":
            args.append(source.value)
            continue
        if source is not None and source.type == "safetensors":
            args.append(_load_safetensor(task.root, source.path, source.tensor_key, name, shape, dtype, device))
            continue
        dist = task.contract.inputs.get(name) or _default_dist(dtype)
        t = _draw(shape or (), dtype, dist, gen, device, axes)
        args.append(t.item() if shape is None else t)
    return args


def _load_safetensor(root: Path, path: str, key: str, name: str, shape, dtype, device: str) -> torch.Tensor:
    from safetensors.torch import load_file

    p = Path(path) if Path(path).is_absolute() else root / path
    tensors = load_file(str(p))
    if key not in tensors:
        raise ValueError(f"input {name!r}: {p} has no tensor {key!r} (has {sorted(tensors)[:10]})")
    t = tensors[key]
    if shape is not None and tuple(t.shape) != shape:
        raise ValueError(f"input {name!r}: {p}[{key}] has shape {tuple(t.shape)}, the definition needs {shape}")
    if t.dtype != dtype:
        raise ValueError(f"input {name!r}: {p}[{key}] is {t.dtype}, the definition needs {dtype}")
    return t.to(device)
