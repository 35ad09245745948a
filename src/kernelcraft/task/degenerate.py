"""Does the contract let a constant pass? (integrity class [degenerate-output])

Runs the definition's reference (task code, trusted) on the smallest workload's inputs on the CPU
and asks, for each floating output: would an all-zero output, or one filled with the reference's
median, pass every element under the contract's tolerance? If so, the tolerance (or the inputs)
cannot tell a kernel from a constant, and ``task check`` / ``eval`` say so.
"""

from __future__ import annotations

import torch

from kernelcraft.task.loader import Task

MAX_BYTES = 64 << 20  # the check runs in-process on the CPU; skip it for tasks with only huge workloads


def degenerate_warnings(task: Task, seed: int = 0) -> list[str]:
    from kernelcraft.gauntlet.compare import normalize_outputs
    from kernelcraft.task.inputs import make_inputs

    small = min(task.workloads, key=lambda w: task.io_bytes(w.axes))
    if task.io_bytes(small.axes) > MAX_BYTES:
        return []
    namespace: dict = {}
    try:
        exec(compile(task.definition.reference, "<reference>", "exec"), namespace)  # noqa: S102 - task code
        args = make_inputs(task, small, seed, "cpu")
        wide = [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        with torch.no_grad():
            try:
                outs = normalize_outputs(namespace["run"](*wide), task.definition)
            except (RuntimeError, TypeError, NotImplementedError):
                # a reference that mixes dtypes on purpose (a KDA request's int8 codes times float32
                # scales) runs in its inputs' own precision, as the judge then runs it
                outs = normalize_outputs(namespace["run"](*args), task.definition)
    except Exception as e:  # noqa: BLE001 - a broken reference is reported, not fatal here
        return [f"could not run the reference on workload {small.uuid} to check for degenerate outputs: {e}"]
    warnings = []
    for (name, spec), ref in zip(task.definition.outputs.items(), outs, strict=True):
        if not isinstance(ref, torch.Tensor) or not ref.is_floating_point() or ref.numel() < 2:
            continue
        ref = ref.detach().to(torch.float64).reshape(-1)
        ref = ref[torch.isfinite(ref)]
        if ref.numel() < 2:
            continue
        tol = task.contract.tolerance.for_output(name, spec.dtype)
        bound = torch.maximum(torch.full_like(ref, tol.atol), tol.rtol * ref.abs())
        for label, const in (("all zeros", 0.0), (f"the constant {float(ref.median()):.4g}", float(ref.median()))):
            if bool(((ref - const).abs() <= bound).all()):
                warnings.append(
                    f"[degenerate-output] output {name!r}: {label} would pass every element on workload "
                    f"{small.uuid} (atol={tol.atol:g}, rtol={tol.rtol:g}); tighten [tolerance] in contract.toml "
                    "or change the inputs so the output varies"
                )
                break
    return warnings
