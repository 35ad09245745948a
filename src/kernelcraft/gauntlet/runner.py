"""Inside the worker: run a built solution on one workload, check it, time it.

The candidate always gets clones of the inputs and runs before the reference on that workload, so
it cannot find the reference's results in memory the reference freed. After the call the inputs
must equal pristine copies and the outputs must not alias them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelcraft.gauntlet.compare import compare, normalize_outputs
from kernelcraft.measure.timing import time_interleaved
from kernelcraft.solution._traceback import candidate_traceback
from kernelcraft.task.dtypes import torch_dtype
from kernelcraft.task.inputs import make_inputs
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload


def _clone(args: list[Any]) -> list[Any]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _upcast(args: list[Any]) -> list[Any]:
    return [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def _is_compile_error(e: BaseException) -> bool:
    names = {cls.__name__ for cls in type(e).__mro__}
    return bool(names & {"CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"})


class Runner:
    def __init__(self, task: Task, fn: Callable, dps: bool, reference: Callable, baseline: Callable,
                 device: str, seed: int):
        self.task, self.fn, self.dps = task, fn, dps
        self.reference, self.baseline = reference, baseline
        self.device, self.seed = device, seed
        self.d = task.definition

    # -- calling conventions -------------------------------------------------------------------
    def _alloc_outputs(self, axes: dict[str, int]) -> list[torch.Tensor]:
        outs = []
        for name, spec in self.d.outputs.items():
            shape = self.d.shape(spec, axes)
            if shape is None:
                raise TypeError(f"output {name!r} is a scalar; destination-passing style needs tensor outputs")
            dtype = torch_dtype(spec.dtype)
            t = torch.empty(shape, dtype=dtype, device=self.device)
            # Poison: an element the kernel never writes cannot pass by luck.
            if dtype.is_floating_point:
                t.fill_(float("nan"))
            elif dtype != torch.bool:
                t.fill_(torch.iinfo(dtype).min)
            outs.append(t)
        return outs

    def _call(self, fn: Callable, args: list[Any], dps: bool, axes: dict[str, int]) -> list[Any]:
        if dps:
            outs = self._alloc_outputs(axes)
            fn(*args, *outs)
            return outs
        return normalize_outputs(fn(*args), self.d)

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize(self.device)

    def _reference_outputs(self, inputs: list[Any]) -> tuple[list[Any], str]:
        """The reference in float64 where its ops allow, else in the inputs' own precision."""
        try:
            out = normalize_outputs(self.reference(*_upcast(inputs)), self.d)
            return out, "float64"
        except (RuntimeError, TypeError, NotImplementedError):
            return normalize_outputs(self.reference(*inputs), self.d), "native"

    # -- gates ---------------------------------------------------------------------------------
    def check(self, w: Workload) -> dict:
        axes = self.d.axis_values(w.axes)
        try:
            inputs = make_inputs(self.task, w, self.seed, self.device)
        except Exception as e:  # noqa: BLE001
            return {"status": "RUNTIME_ERROR", "gate": "reference", "reason": f"making the inputs failed: {e}"}
        pristine = _clone(inputs)
        args = _clone(inputs)
        try:
            outputs = self._call(self.fn, args, self.dps, axes)
            self._sync()
        except BaseException as e:  # noqa: BLE001 - whatever the candidate raises is its verdict
            status = "COMPILE_ERROR" if _is_compile_error(e) else "RUNTIME_ERROR"
            return {"status": status, "gate": "build" if status == "COMPILE_ERROR" else "correctness",
                    "reason": candidate_traceback(e)}
        integrity = self._integrity(pristine, args, outputs)
        if integrity:
            return {"status": "REJECTED", "gate": "integrity", "reason": integrity}
        try:
            expected, precision = self._reference_outputs(pristine)
            self._sync()
        except Exception as e:  # noqa: BLE001
            return {"status": "RUNTIME_ERROR", "gate": "reference",
                    "reason": f"the task's reference failed (not the candidate's fault): {candidate_traceback(e)}"}
        c = compare(outputs, expected, self.d, self.task.contract, axes, self.device)
        return {"status": c.status, "gate": "correctness", "reason": c.reason, "max_abs_error": c.max_abs_error,
                "max_rel_error": c.max_rel_error, "reference_precision": precision}

    def _integrity(self, pristine: list[Any], args: list[Any], outputs: list[Any]) -> str:
        names = list(self.d.inputs)
        for name, before, after in zip(names, pristine, args, strict=True):
            if isinstance(before, torch.Tensor) and not torch.equal(before, after):
                return f"the candidate modified its input {name!r} (inputs are read-only)"
        spans = [(a.untyped_storage().data_ptr(), a.untyped_storage().nbytes(), n)
                 for n, a in zip(names, args, strict=True) if isinstance(a, torch.Tensor)]
        for oname, out in zip(self.d.outputs, outputs, strict=True):
            if isinstance(out, torch.Tensor) and out.numel():
                p = out.untyped_storage().data_ptr()
                for start, size, iname in spans:
                    if start <= p < start + size:
                        return f"output {oname!r} aliases input {iname!r}; outputs must be fresh tensors"
        return ""

    def time(self, w: Workload, role: str, **policy: Any) -> dict:
        axes = self.d.axis_values(w.axes)
        inputs = make_inputs(self.task, w, self.seed, self.device)
        p = self.task.contract.timing.model_dump() | policy
        if not self.device.startswith("cuda"):
            # The interpreter is slow; a handful of wall-clock samples is all a CPU row can claim.
            p["min_reps"] = min(p["min_reps"], 3)
        fns: dict[str, Callable[[], object]] = {}
        if self.dps:
            outs = self._alloc_outputs(axes)
            fns["candidate"] = lambda: self.fn(*inputs, *outs)
        else:
            fns["candidate"] = lambda: self.fn(*inputs)
        if role != "baseline":
            fns["baseline"] = lambda: self.baseline(*inputs)
        fns["reference"] = lambda: self.reference(*inputs)
        try:
            t = time_interleaved(fns, self.device, budget_ms=p["budget_ms"], min_reps=p["min_reps"],
                                 max_reps=p["max_reps"], warmup=p["warmup"])
        except BaseException as e:  # noqa: BLE001
            return {"status": "RUNTIME_ERROR", "gate": "timing", "reason": candidate_traceback(e)}
        # Check again after timing: a kernel that is right once and wrong when called repeatedly fails.
        again = self.check(w)
        if again["status"] != "PASSED":
            again["reason"] = "after timing: " + again["reason"]
            again["gate"] = "timing" if again["gate"] == "correctness" else again["gate"]
            return again
        cand = t["candidate"]
        base = t["baseline"] if "baseline" in t else cand
        return {"status": "PASSED", "gate": "timing", "latency_ms": cand.median_ms,
                "baseline_latency_ms": base.median_ms, "reference_latency_ms": t["reference"].median_ms,
                "timing": cand.to_dict()}
