"""The check a written folder must pass before it is kept: it loads and its baseline behaves."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ._errors import ConversionError, _describe_error, _stage
from ._names import _DTYPE_NAMES


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


@dataclass
class Smoke:
    """The check run's findings: inputs the forward writes, whether outputs alias inputs, and the
    baseline's and the float64 reference's outputs on the check workload."""

    written: list[int]
    aliased: bool
    workload: dict[str, int] = field(default_factory=dict)
    got: list[Any] = field(default_factory=list)
    expected: list[Any] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _smoke(folder: Path, seed: int, device: str = "cpu") -> Smoke:
    """Run the folder's baseline (twice) and reference on its smallest workload, on ``device``."""
    from kernelcraft.task.inputs import make_inputs
    from kernelcraft.task.loader import load_task

    with _stage("loading the written task folder"):
        task = load_task(folder)
    d = task.definition
    w = min(task.workloads, key=lambda w: task.io_bytes(w.axes))
    axes = d.axis_values(w.axes)
    with _stage(f"making the inputs of the check workload {w.axes} with the problem's get_inputs()"):
        inputs = make_inputs(task, w, seed, device)
    baseline = _load_run((folder / "baseline.py").read_text(), str(folder / "baseline.py"))
    reference = _load_run(d.reference, "<reference>")
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]
    with _stage(f"the baseline on the check workload {w.axes}"):
        with torch.no_grad():
            first = _as_list(baseline(*args))
    written = [i for i, (a, b) in enumerate(zip(inputs, args, strict=True))
               if isinstance(a, torch.Tensor) and not _equal(a, b)]
    spans = _storages(args)
    aliased = any(start <= o.untyped_storage().data_ptr() < start + n
                  for o in first if isinstance(o, torch.Tensor) and o.numel() for start, n in spans)
    if written or aliased:
        return Smoke(written, aliased)
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
        with _stage("the reference on the check workload"), torch.no_grad():
            expected = _as_list(reference(*inputs))
    return Smoke([], False, dict(w.axes), first, expected, warnings)
