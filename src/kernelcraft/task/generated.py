"""Inputs from a task's own generators (``[inputs] generator``, ``[[inputs.sets]]``): the one
mechanism for inputs that independent draws of ``[inputs.<name>]`` cannot make.

Two kinds of task use it:

- a KDA request, whose inputs live in a domain independent random tensors miss (a fill count ``h``
  in ``[0, L)``, positive scales, int8 codes in ``[-127, 127]``, empty buffer entries zero, the next
  decode step built from the reference's output): its ``benchmark.py`` draws them itself;
- a KernelBench problem (``kernelcraft import kernelbench``), whose ``get_inputs()`` makes
  triangular, symmetric, normalised or +-1 inputs: the importer wraps it in the task's ``inputs.py``.

The contract names those functions and the judge calls them (trusted task code, imported and run in
the judge process only, never in a candidate's runner: :mod:`kernelcraft.task.taskcode`):

- a generator is called as ``fn(*axis_values, device, seed=seed)``: the var axes in definition order
  (or ``[inputs] axes``), a ``torch.device``, and a seed drawn from (run seed, workload, set);
- a chained set (``after = "NAME"``) as ``fn(inputs_of_NAME, reference_outputs_on_them, device, seed)``.

Whatever comes back must be the definition's inputs in order, each tensor with exactly the
definition's shape and dtype on the judge's device (a mistake names the function and the input).
An item may be None where the workload gives that input itself (``scalar`` or ``safetensors``, a
KernelBench model's parameters); the workload's value is used there whatever the generator returned.
The definition's value constraints are checked on every set made (:func:`kernelcraft.task.inputs.check_values`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelcraft.task.dtypes import torch_dtype
from kernelcraft.task.inputs import (
    InputsError,
    check_values,
    make_inputs,
    with_workload_inputs,
    workload_seed,
)
from kernelcraft.task.loader import Task
from kernelcraft.task.taskcode import load_function
from kernelcraft.task.workload import Workload

DEFAULT_SET = "default"


class GeneratorError(InputsError):
    """A task's generator returned something that is not the definition's inputs."""


def conform(task: Task, ref: str, result: Any, workload: Workload, device: str, set_name: str = DEFAULT_SET) -> list[Any]:
    """The generator's result as the definition's inputs (the workload's own where it gives them),
    checked; GeneratorError (an InputsError) naming ``ref`` and the input otherwise."""
    d = task.definition
    axes = d.axis_values(workload.axes)
    names = list(d.inputs)
    if not isinstance(result, tuple | list) or len(result) != len(names):
        got = f"{len(result)} values" if isinstance(result, tuple | list) else type(result).__name__
        raise GeneratorError(f"{ref} returned {got}; the definition has {len(names)} inputs {names}, in that order")
    out: dict[str, Any] = {}
    want_device = torch.device(device).type
    for name, spec, value in zip(names, d.inputs.values(), result, strict=True):
        source = workload.inputs.get(name)
        if source is not None and source.type in ("scalar", "safetensors"):
            continue  # the workload's value (a model's parameters from its safetensors)
        if value is None:
            raise GeneratorError(f"{ref} returned None for input {name!r}, which the workload does not give "
                                 f"(only a scalar or safetensors input of the workload may be None)")
        shape = d.shape(spec, axes)
        if shape is None:
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                value = value.item()
            if not isinstance(value, bool | int | float):
                raise GeneratorError(f"{ref}: input {name!r} is a scalar in the definition; got {type(value).__name__}")
            out[name] = value
            continue
        if not isinstance(value, torch.Tensor):
            raise GeneratorError(f"{ref}: input {name!r} must be a tensor of shape {shape}; got {type(value).__name__}")
        if tuple(value.shape) != shape:
            raise GeneratorError(f"{ref}: input {name!r} has shape {tuple(value.shape)}; the definition needs {shape}")
        if value.dtype != torch_dtype(spec.dtype):
            raise GeneratorError(f"{ref}: input {name!r} is {str(value.dtype).removeprefix('torch.')}; the definition "
                                 f"needs {spec.dtype}")
        if value.device.type != want_device:
            raise GeneratorError(f"{ref}: input {name!r} is on {value.device}; the judge runs on {device}")
        out[name] = value.contiguous()
    args = with_workload_inputs(task, workload, device, out)
    where = "" if set_name == DEFAULT_SET else f" of input set {set_name!r}"
    check_values(task, workload, args, f"{ref} made{where}",
                 fix=f"the task's generator must keep to its definition (fix {ref} or the constraint)")
    return args


def _axis_args(task: Task, axes: dict[str, int]) -> list[int]:
    listed = task.contract.input_generator.axes
    names = listed if listed is not None else task.definition.var_axes
    return [axes[n] for n in names]


def _seed(seed: int, workload: Workload, set_name: str) -> int:
    return workload_seed(seed, workload.uuid if set_name == DEFAULT_SET else f"{workload.uuid}:{set_name}")


def _generate(task: Task, ref: str, workload: Workload, seed: int, device: str, set_name: str) -> list[Any]:
    axes = task.definition.axis_values(workload.axes)
    fn = load_function(task.root, ref)
    result = fn(*_axis_args(task, axes), torch.device(device), seed=_seed(seed, workload, set_name))
    return conform(task, ref, result, workload, device, set_name)


def generated_inputs(task: Task, workload: Workload, seed: int, device: str) -> list[Any]:
    """The default set: ``[inputs] generator`` (what timing's fresh inputs are drawn from too)."""
    return _generate(task, task.contract.input_generator.generator, workload, seed, device, DEFAULT_SET)


def input_sets(task: Task, workload: Workload, seed: int, device: str,
               reference: Callable[[list[Any]], list[Any]]) -> list[tuple[str, Callable[[dict], list[Any]]]]:
    """(name, make) per input set a correctness check runs, in order; ``make(made)`` returns that
    set's inputs given the sets made so far (``made``: name -> inputs). ``reference(inputs)``: the
    reference's outputs in the inputs' own precision (a chained set's starting point)."""
    out: list[tuple[str, Callable[[dict], list[Any]]]] = [
        (DEFAULT_SET, lambda made: make_inputs(task, workload, seed, device))]
    for s in task.contract.input_generator.sets:
        if s.after is None:
            out.append((s.name, lambda made, s=s: _generate(task, s.generator, workload, seed, device, s.name)))
            continue

        def chained(made: dict, s=s) -> list[Any]:
            parent = made[s.after]
            start = [a.clone() if isinstance(a, torch.Tensor) else a for a in parent]
            fn = load_function(task.root, s.generator)
            result = fn(start, reference(parent), torch.device(device), _seed(seed, workload, s.name))
            return conform(task, s.generator, result, workload, device, s.name)

        out.append((s.name, chained))
    return out
