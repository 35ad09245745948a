"""Inside the worker: run a built solution on one workload, check it, time it.

The candidate always gets clones of the inputs and runs before the reference on that workload, so
it cannot find the reference's results in memory the reference freed (and on CUDA the allocator is
seeded with NaN-filled blocks first). The integrity checks of :mod:`kernelcraft.gauntlet.integrity`
run around every candidate call; a second call on the same inputs must agree bit for bit.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch

from kernelcraft.gauntlet.compare import canonical_outputs, compare, normalize_outputs
from kernelcraft.gauntlet.integrity import (
    OpAudit,
    TamperSnapshot,
    bitwise_equal,
    check_outputs,
    native_threads,
    poison_allocator,
    python_threads,
)
from kernelcraft.gauntlet.stress import atol_floor
from kernelcraft.measure.timing import time_interleaved
from kernelcraft.solution._traceback import candidate_traceback
from kernelcraft.task.dtypes import torch_dtype
from kernelcraft.task.inputs import STRESS_PREFIX, make_inputs
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload

# Device work allowed to outlast a candidate's end event before the timing gate calls it escaped:
# the tails of honest kernels match a no-op's within a few microseconds.
ESCAPE_MS = 0.02
ESCAPE_FRACTION = 0.1


def _poison(t: torch.Tensor) -> torch.Tensor:
    """Fill an output buffer so an element the kernel never writes cannot pass by luck."""
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).min)
    return t


def _clone(args: list[Any]) -> list[Any]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _upcast(args: list[Any]) -> list[Any]:
    return [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def _is_compile_error(e: BaseException) -> bool:
    names = {cls.__name__ for cls in type(e).__mro__}
    return bool(names & {"CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"})


class Runner:
    def __init__(self, task: Task, fn: Callable, dps: bool, reference: Callable, baseline: Callable,
                 device: str, seed: int, audit: bool = True, tamper: TamperSnapshot | None = None):
        self.task, self.fn, self.dps = task, fn, dps
        self.tamper = tamper  # taken before the candidate was imported
        self.audit = audit  # the integrity checks; off for trusted rows (baseline, torch.compile)
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
            outs.append(_poison(torch.empty(shape, dtype=dtype, device=self.device)))
        return outs

    def _first_difference(self, first: list[Any], second: list[Any]) -> tuple[str, int] | None:
        """The first output (name, differing elements) where two calls' outputs differ bit for bit, in
        the checkers' canonical form (tied top-k entries may come in another order)."""
        contract = self.task.contract
        first, second = canonical_outputs(first, self.d, contract), canonical_outputs(second, self.d, contract)
        for name, a, b in zip(self.d.outputs, first, second, strict=True):
            same, n = bitwise_equal(a, b)
            if not same:
                return name, n
        return None

    def _call(self, fn: Callable, args: list[Any], outs: list[torch.Tensor] | None) -> list[Any]:
        if outs is not None:
            fn(*args, *outs)
            return outs
        return normalize_outputs(fn(*args), self.d)

    def _run_candidate(self, args: list[Any], axes: dict[str, int], warm: bool = False) -> tuple[list[Any], str]:
        """One audited call of the candidate; returns its outputs and an integrity failure, if any.
        ``warm``: libraries have started their thread pools, so native threads are counted too."""
        outs = self._alloc_outputs(axes) if self.dps else None
        if self.audit:
            poison_allocator([(self.d.shape(s, axes), torch_dtype(s.dtype)) for s in self.d.outputs.values()
                              if s.shape is not None], self.device)
        threads, native = python_threads(), native_threads()
        audit = OpAudit() if self.audit else None
        with audit or nullcontext():
            outputs = self._call(self.fn, args, outs)
        self._sync()
        if audit is None:
            return outputs, ""
        if self.tamper is not None:
            tampered = self.tamper.reason()
            if tampered:
                return outputs, tampered
        allowed = set(self.task.contract.integrity.allowed_torch_ops)
        bad = audit.forbidden(allowed)
        if bad:
            ops = ", ".join(f"aten.{n} x{c}" for n, c in sorted(bad.items(), key=lambda x: -x[1])[:8])
            return outputs, (f"[torch-compute] the candidate called torch compute ops: {ops}. A solution must "
                             "compute in its own kernels (allocation, views and metadata are allowed; "
                             "contract.toml [integrity] allowed_torch_ops may allow more)")
        if python_threads() > threads:
            return outputs, f"[threads] the call left {python_threads() - threads} more Python thread(s) running"
        if warm and native >= 0 and native_threads() > native:
            return outputs, (f"[threads] the call left {native_threads() - native} more native thread(s) running "
                             "(work outside the timed stream)")
        return outputs, ""

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
    def check(self, w: Workload, salt: int = 0) -> dict:
        """Correctness and integrity on one workload; ``salt`` draws a fresh set of inputs."""
        axes = self.d.axis_values(w.axes)
        try:
            inputs = make_inputs(self.task, w, self.seed + salt, self.device)
        except Exception as e:  # noqa: BLE001
            return {"status": "RUNTIME_ERROR", "gate": "reference", "reason": f"making the inputs failed: {e}"}
        pristine = _clone(inputs)
        args = _clone(inputs)
        try:
            outputs, cheat = self._run_candidate(args, axes)
        except BaseException as e:  # noqa: BLE001 - whatever the candidate raises is its verdict
            status = "COMPILE_ERROR" if _is_compile_error(e) else "RUNTIME_ERROR"
            return {"status": status, "gate": "build" if status == "COMPILE_ERROR" else "correctness",
                    "reason": candidate_traceback(e)}
        cheat = cheat or self._integrity(pristine, args, outputs)
        if cheat:
            return {"status": "REJECTED", "gate": "integrity", "reason": cheat}
        try:
            expected, precision = self._reference_outputs(pristine)
            self._sync()
        except Exception as e:  # noqa: BLE001
            return {"status": "RUNTIME_ERROR", "gate": "reference",
                    "reason": f"the task's reference failed (not the candidate's fault): {candidate_traceback(e)}"}
        # stress inputs: no atol below what the reference's own float32 math costs on them
        floor = atol_floor(self.d, self.reference, pristine, expected) if w.uuid.startswith(STRESS_PREFIX) else None
        c = compare(outputs, expected, self.d, self.task.contract, axes, self.device, pristine, floor)
        result = {"status": c.status, "gate": "correctness", "reason": c.reason, "max_abs_error": c.max_abs_error,
                  "max_rel_error": c.max_rel_error, "reference_precision": precision}
        if c.status == "PASSED" and self.audit:
            again = self._repeat(pristine, outputs, expected, axes, floor)
            if again:
                return {"status": "REJECTED", "gate": "integrity", "reason": again}
        return result

    def _repeat(self, pristine: list[Any], first: list[Any], expected: list[Any], axes: dict[str, int],
                floor: dict[str, float] | None = None) -> str:
        """A second call on identical inputs: bit for bit equal to the first (in the checkers'
        canonical form); where the contract says ``deterministic = false``, it must pass the checks again."""
        try:
            second, cheat = self._run_candidate(_clone(pristine), axes, warm=True)
        except BaseException as e:  # noqa: BLE001
            return f"[nondeterminism] a second call on the same inputs raised: {candidate_traceback(e)}"
        if cheat:
            return cheat
        if not self.task.contract.integrity.deterministic:
            c = compare(second, expected, self.d, self.task.contract, axes, self.device, pristine, floor)
            return "" if c.status == "PASSED" else f"[nondeterminism] a second call on identical inputs: {c.reason}"
        diff = self._first_difference(first, second)
        if diff:
            name, n = diff
            return (f"[nondeterminism] output {name!r}: a second call on identical inputs differs in {n} "
                    "element(s) (uninitialised memory, a race, or state kept between calls); "
                    "contract.toml [integrity] deterministic = false allows it where atomics make it unavoidable")
        return ""

    def _integrity(self, pristine: list[Any], args: list[Any], outputs: list[Any]) -> str:
        names = list(self.d.inputs)
        for name, before, after in zip(names, pristine, args, strict=True):
            if isinstance(before, torch.Tensor) and not bitwise_equal(before, after)[0]:
                return f"[input-mutation] the candidate modified its input {name!r} (inputs are read-only)"
        return check_outputs(outputs, list(self.d.outputs), args, names) if self.audit else ""

    def _graph_mismatch(self, captured: tuple[object, object] | None, inputs: list[Any], axes: dict[str, int],
                        outs: list[torch.Tensor] | None) -> str:
        """The timed graph must compute what an eager call computes on the same inputs."""
        if captured is None or not self.task.contract.integrity.deterministic:
            return ""  # bit-for-bit agreement is only asked of deterministic tasks
        graph, returned = captured
        if outs is not None:
            for o in outs:
                _poison(o)
            graph.replay()
            self._sync()
            replayed = _clone(outs)
            eager = self._alloc_outputs(axes)
            self.fn(*inputs, *eager)
        else:
            graph.replay()
            self._sync()
            replayed = _clone(normalize_outputs(returned, self.d))
            eager = normalize_outputs(self.fn(*inputs), self.d)
        self._sync()
        diff = self._first_difference(replayed, eager)
        if diff:
            name, n = diff
            return (f"[graph-mismatch] output {name!r}: the CUDA graph the timer replays differs from an eager "
                    f"call on the same inputs in {n} element(s): the timed work is not the checked work")
        return ""

    def _extra_warmup(self, w: Workload) -> int:
        """0-3 more warm-up calls, drawn from the run's secret seed: how many calls precede the
        capture and the timed replays cannot be predicted by candidate code that counts its calls."""
        return random.Random(f"{self.seed}:{w.uuid}").randrange(4)

    def time(self, w: Workload, role: str, **policy: Any) -> dict:
        axes = self.d.axis_values(w.axes)
        inputs = make_inputs(self.task, w, self.seed, self.device)
        p = self.task.contract.timing.model_dump() | policy
        if not self.device.startswith("cuda"):
            # The interpreter is slow; a handful of wall-clock samples is all a CPU row can claim.
            p["min_reps"] = min(p["min_reps"], 3)
        fns: dict[str, Callable[[], object]] = {}
        outs = None
        if self.dps:
            outs = self._alloc_outputs(axes)
            fns["candidate"] = lambda: self.fn(*inputs, *outs)
        else:
            fns["candidate"] = lambda: self.fn(*inputs)
        if role != "baseline":
            fns["baseline"] = lambda: self.baseline(*inputs)
        fns["reference"] = lambda: self.reference(*inputs)
        graphs: dict[str, tuple[object, object]] = {}
        try:
            t = time_interleaved(fns, self.device, budget_ms=p["budget_ms"], min_reps=p["min_reps"],
                                 max_reps=p["max_reps"], warmup=p["warmup"] + self._extra_warmup(w),
                                 graphs=graphs)
            mismatch = self._graph_mismatch(graphs.get("candidate"), inputs, axes, outs if self.dps else None)
        except BaseException as e:  # noqa: BLE001
            return {"status": "RUNTIME_ERROR", "gate": "timing", "reason": candidate_traceback(e)}
        if mismatch and self.audit:
            return {"status": "REJECTED", "gate": "timing", "reason": mismatch}
        if self.audit and self.tamper is not None and self.tamper.reason():
            return {"status": "REJECTED", "gate": "integrity", "reason": "during timing: " + self.tamper.reason()}
        cand = t["candidate"]
        if self.audit and cand.escaped_ms is not None and cand.escaped_ms > ESCAPE_MS + ESCAPE_FRACTION * cand.median_ms:
            return {"status": "REJECTED", "gate": "timing", "reason": (
                f"[escaped-timer] after the end event the device stayed busy {cand.escaped_ms:.4f} ms longer than "
                f"after a no-op (the events measured {cand.median_ms:.4f} ms): work on another stream or a "
                "deferred launch escaped the timer")}
        # Check again after timing, on fresh values of the same shapes: a kernel that is right once and
        # wrong when called repeatedly, or that caches outputs by pointer, shape or value, fails here.
        again = self.check(w, salt=0x5EED)
        if again["status"] != "PASSED":
            again["reason"] = "after timing: " + again["reason"]
            again["gate"] = "timing" if again["gate"] == "correctness" else again["gate"]
            return again
        base = t["baseline"] if "baseline" in t else cand
        return {"status": "PASSED", "gate": "timing", "latency_ms": cand.median_ms,
                "baseline_latency_ms": base.median_ms, "reference_latency_ms": t["reference"].median_ms,
                "timing": cand.to_dict()}
