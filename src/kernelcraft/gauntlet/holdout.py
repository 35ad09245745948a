"""Gate 4, generalization: holdout shapes the candidate's author never saw.

Drawn per run from the secret seed, inside the definition's constraints, by changing one var axis
of a workload at a time to a value kernels tuned on the benchmark shapes tend to get wrong: 1, a
small odd size, a size just past a power of two, one more than the largest seen, twice the largest
seen plus one. A third of the draws (at least one) are the largest that fit the size limit. Plus
the contract's fixed ``[generalization] shapes``.
"""

from __future__ import annotations

import random

from kernelcraft.task.definition import AxisVar
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload


def _valid(task: Task, axes: dict[str, int]) -> bool:
    """Inside the definition's constraints, and inputs can be drawn there (an offsets total that fits)."""
    from kernelcraft.task.inputs import infeasible

    try:
        return not task.definition.violated_constraints(task.definition.axis_values(axes)) and not infeasible(task, axes)
    except ValueError:
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


def holdout_workloads(task: Task, seed: int, max_bytes: int) -> list[Workload]:
    d = task.definition
    var = [n for n, a in d.axes.items() if isinstance(a, AxisVar)]
    out: list[Workload] = []
    for i, shape in enumerate(task.contract.generalization.shapes):
        out.append(Workload(uuid=f"holdout-fixed-{i}", axes=shape, inputs=_template_inputs(task)))
    count = task.contract.generalization.holdouts
    if not var or count == 0:
        return out
    seen = {tuple(sorted(w.axes.items())) for w in task.workloads}
    largest = {a: max(w.axes.get(a, 1) for w in task.workloads) for a in var}
    candidates: dict[tuple, dict[str, int]] = {}
    for base in task.workloads:
        for axis in var:
            m = largest[axis]
            for v in {1, 3, 7, 17, 129, 1025, m + 1, 2 * m + 1, max(1, m - 1)}:
                axes = dict(base.axes)
                axes[axis] = v
                key = tuple(sorted(axes.items()))
                if key in seen or key in candidates or not _valid(task, axes) or task.io_bytes(axes) > max_bytes:
                    continue
                candidates[key] = axes
    if not candidates:
        return out
    rng = random.Random(seed ^ 0x6E6572616C)
    pool = list(candidates.values())
    rng.shuffle(pool)
    big = sorted(pool, key=lambda a: task.io_bytes(a), reverse=True)
    chosen = big[: max(1, count // 3)]
    chosen += [a for a in pool if a not in chosen][: count - len(chosen)]
    template = _template_inputs(task)
    for i, axes in enumerate(chosen):
        out.append(Workload(uuid=f"holdout-{i}", axes=axes, inputs=template))
    return out
