"""The judge: inputs, reference, checks and timing of one solution on one workload. Trusted code
only: it never imports a candidate. A candidate runs in its runner (:mod:`kernelcraft.runner`) and is
reached through :class:`RemoteSubject`; trusted rows (the baseline, torch.compile, peers) are plain
functions here (:class:`LocalSubject`).

What the judge decides on, it holds itself: the inputs (drawn from the run's secret seed, which never
leaves this process), pristine copies of them, the reference's outputs (in float64 where the reference
allows), the outputs of the candidate copied out of the shared arena, and the contract. What the
runner reports (op counts, threads, timings) is evidence, validated and bounded
(:mod:`kernelcraft.runner.protocol`); it can count against a candidate, never make a wrong answer pass.

Timing: the candidate's timed calls run in its runner, interleaved with the baseline and the
reference timed here, by the one clock (:mod:`kernelcraft.measure.timing`). Before each timed call
the judge writes fresh input values into the arena, and after a secret random subset of them (every
call with probability 1/8, and two calls among the first ``min_reps``) it reads the outputs back and
checks them against the reference on exactly those inputs: a candidate that does less work when timed
than when checked is caught ``[timed-output]``.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelcraft.gauntlet import refcache
from kernelcraft.gauntlet.checkers import wants_native_reference
from kernelcraft.gauntlet.compare import Check, canonical_outputs, compare, normalize_outputs
from kernelcraft.gauntlet.integrity import bitwise_equal
from kernelcraft.gauntlet.stress import atol_floor
from kernelcraft.measure.timing import Remote, time_interleaved
from kernelcraft.runner import protocol
from kernelcraft.runner.checks import ALLOWED_OPS
from kernelcraft.runner.client import ProtocolError, RunnerClient, RunnerDied
from kernelcraft.runner.shared import Slot, dtype_name, layout, new_arena
from kernelcraft.solution._traceback import candidate_traceback
from kernelcraft.task.dtypes import torch_dtype
from kernelcraft.task.generated import input_sets
from kernelcraft.task.inputs import STRESS_PREFIX, make_inputs
from kernelcraft.task.loader import Task
from kernelcraft.task.workload import Workload

# Device work allowed to outlast a candidate's end event before the timing gate calls it escaped:
# the tails of honest kernels match a no-op's within a few microseconds.
ESCAPE_MS = 0.02
ESCAPE_FRACTION = 0.1
NOOP_EVERY = 4  # the runner's no-op turn on one rep in this many
CHECK_PROBABILITY = 1 / 8  # share of timed calls whose outputs the judge checks (chosen secretly)
# A placement reuses the arena it fits in unless that is over this factor and slack larger than it needs.
ARENA_KEEP_FACTOR = 4
ARENA_KEEP_SLACK = 1 << 30


OOM_RETRY_S = 5.0  # the wait before a reference that ran out of device memory runs once more
CACHE_KEEP_FRACTION = 0.25  # a judge keeps at most this share of the device's memory cached after a reference call


def _give_back_cuda_cache(device: str, only_above: float = 0.0) -> None:
    """Return torch's cached (unused) device memory to the driver, so that other processes on the GPU can
    allocate it; with ``only_above``, only when the cache holds more than that share of the device."""
    if not str(device).startswith("cuda") or not torch.cuda.is_available():
        return
    if only_above:
        reserved = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        if reserved <= only_above * torch.cuda.get_device_properties(device).total_memory:
            return
    import gc

    gc.collect()
    torch.cuda.empty_cache()


class Refused(Exception):
    """The candidate's runner broke the protocol or died: the job's verdict, with its class."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def _poison_value(dtype: torch.dtype) -> float | bool | int:
    if dtype.is_floating_point:
        return float("nan")
    return True if dtype == torch.bool else torch.iinfo(dtype).min


def _poison(t: torch.Tensor) -> torch.Tensor:
    """Fill an output buffer so an element the kernel never writes cannot pass by luck."""
    t.fill_(_poison_value(t.dtype))
    return t


def _clone(args: list[Any]) -> list[Any]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _upcast(args: list[Any]) -> list[Any]:
    return [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def _merge(a: dict, b: dict) -> dict:
    """Two input sets' passing results as one: the worst of each error measure."""
    out = dict(a)
    for k in ("max_abs_error", "max_rel_error", "request_judge_ratio"):
        vals = [r[k] for r in (a, b) if r.get(k) is not None]
        if vals:
            out[k] = max(vals)
    return out


def _untouched(outputs: list[Any]) -> bool:
    """Every tensor output still holds, in every element, what :func:`_poison` filled it with."""
    tensors = [o for o in outputs if isinstance(o, torch.Tensor) and o.numel()]
    if not tensors:
        return False
    return all(bool(torch.isnan(t).all() if t.dtype.is_floating_point else (t == _poison_value(t.dtype)).all())
               for t in tensors)


def _accepted_args(error: str) -> int | None:
    """How many positional arguments the solution's entry point takes, from the TypeError it raised
    when called (pybind11's "incompatible function arguments" with its first signature, or Python's
    "takes N positional arguments"); None when the message says neither."""
    m = re.search(r"takes (\d+) positional arguments? but \d+ (?:were|was) given", error)
    if m:
        return int(m.group(1))
    m = re.search(r"incompatible function arguments\. The following argument types are supported:\s*1\. \((.*)\) ->",
                  error)
    if not m:
        return None
    depth, count, body = 0, 1, m.group(1).strip()
    if not body:
        return 0
    for ch in body:
        depth += ch in "<([{"
        depth -= ch in ">)]}"
        count += ch == "," and depth == 0
    return None if "*args" in body or "kwargs" in body else count


def calling_convention_hint(error: str, dps: bool, n_inputs: int, n_outputs: int) -> str:
    """Why a call failed before any work, when the entry point's arity is the other calling convention's:
    destination-passing style passes the outputs after the inputs (FlashInfer-Bench's default where a
    solution's spec does not say ``destination_passing_style``); value-returning passes the inputs only."""
    taken = _accepted_args(error)
    if taken is None or n_outputs == 0:
        return ""
    if dps and taken == n_inputs:
        return (f"\n[calling-convention] the entry point takes {taken} argument(s), the definition's inputs only, but "
                f"the solution's spec asks for destination-passing style (the outputs passed after the inputs: "
                f"{n_inputs + n_outputs} arguments; FlashInfer-Bench's default where spec.destination_passing_style "
                "is not given). If run returns its outputs, set \"destination_passing_style\": false in the spec.")
    if not dps and taken == n_inputs + n_outputs:
        return (f"\n[calling-convention] the entry point takes {taken} arguments, the inputs and the outputs, but the "
                "solution's spec says value-returning (destination_passing_style false): the outputs are not passed. "
                "If run writes into preallocated outputs, set \"destination_passing_style\": true in the spec.")
    return ""


def _is_compile_error(e: BaseException) -> bool:
    names = {cls.__name__ for cls in type(e).__mro__}
    return bool(names & {"CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"})


@dataclass
class Called:
    """One call's outcome, as the judge sees it."""

    outputs: list[Any] | None = None  # judge-owned tensors / values, in the definition's output order
    error: str = ""  # what the solution raised (its verdict: RUNTIME_ERROR or COMPILE_ERROR)
    compile_error: bool = False
    wrong: Check | None = None  # an output of the wrong kind, shape, dtype or device
    finding: str = ""  # an integrity problem ([class] reason)
    evidence: dict = field(default_factory=dict)


class Subject:
    """What the judge calls: ``place`` inputs, then ``call`` on them; ``seen`` is what the calls read."""

    dps: bool = False
    audited: bool = False

    def place(self, inputs: list[Any], axes: dict[str, int]) -> None:
        raise NotImplementedError

    def refill(self, inputs: list[Any]) -> None:
        """New values into the placed inputs (same shapes)."""
        for dst, src in zip(self.seen(), inputs, strict=True):
            if isinstance(dst, torch.Tensor):
                dst.copy_(src)

    def seen(self) -> list[Any]:
        raise NotImplementedError

    def reserve(self, sizes: list[int]) -> None:
        """Room for placements of these arena sizes to come (a subject with no arena: nothing)."""

    def call(self, warm: bool = False) -> Called:
        raise NotImplementedError


class LocalSubject(Subject):
    """A trusted function of this process (baseline, torch.compile, a peer, a reference)."""

    def __init__(self, fn: Callable, judge: Judge, dps: bool = False, prepare: Callable[..., tuple] | None = None):
        self.fn, self.judge, self.dps, self.prepare = fn, judge, dps, prepare
        self.args: list[Any] = []
        self.axes: dict[str, int] = {}

    def _arguments(self) -> tuple:
        """A peer's ``prepare`` (a workspace, a weight layout a deployment keeps) runs outside timing."""
        return tuple(self.prepare(*self.args)) if self.prepare is not None else tuple(self.args)

    def place(self, inputs: list[Any], axes: dict[str, int]) -> None:
        self.args, self.axes = _clone(inputs), axes

    def seen(self) -> list[Any]:
        return self.args

    def call(self, warm: bool = False) -> Called:
        try:
            args = self._arguments()
            if self.dps:
                outs = self.judge.alloc_outputs(self.axes)
                self.fn(*args, *outs)
                out = outs
            else:
                out = normalize_outputs(self.fn(*args), self.judge.d)
            self.judge.sync()
        except BaseException as e:  # noqa: BLE001 - a trusted row that raises is that row's verdict
            return Called(error=candidate_traceback(e), compile_error=_is_compile_error(e))
        return Called(outputs=out)

    def timed(self) -> Callable[[], object]:
        args = self._arguments()
        if self.dps:
            outs = self.judge.alloc_outputs(self.axes)
            return lambda: self.fn(*args, *outs)
        return lambda: self.fn(*args)


def _keeps(arena_size: int, size: int) -> bool:
    """An arena of ``arena_size`` bytes takes a placement of ``size``: it holds it and is not much larger
    (a huge holdout's arena is not kept for the small workloads after it)."""
    return size <= arena_size <= max(ARENA_KEEP_FACTOR * size, size + ARENA_KEEP_SLACK)


class RemoteSubject(Subject):
    """The candidate, in its runner: inputs and outputs in a shared arena the judge owns."""

    audited = True

    def __init__(self, client: RunnerClient, judge: Judge, dps: bool, timeout_s: float,
                 on_event: Callable[[str], None] | None = None):
        self.client, self.judge, self.dps, self.timeout_s = client, judge, dps, timeout_s
        self.on_event = on_event
        self.arena = None
        self.mapped = False  # the runner has mapped self.arena
        self.views: list[Any] = []
        self.out_slots: list[Slot | None] = []
        self.out_views: list[torch.Tensor | None] = []
        self.release = False  # Triton compiles during calls may give the GPU slot up (set by the worker)

    def place(self, inputs: list[Any], axes: dict[str, int]) -> None:
        d = self.judge.d
        tensors = [(tuple(a.shape), dtype_name(a.dtype)) for a in inputs if isinstance(a, torch.Tensor)]
        outs = []
        for spec in d.outputs.values():
            shape = d.shape(spec, axes)
            if shape is not None:
                outs.append((shape, spec.dtype))
        slots, size = layout(tensors + outs)
        if not self._fits(size):
            self._new_arena(size)
        in_slots, out_tensor_slots = slots[:len(tensors)], iter(slots[len(tensors):])
        spec_in, self.views, it = [], [], iter(in_slots)
        for a in inputs:
            if isinstance(a, torch.Tensor):
                s = next(it)
                v = self.arena.view(s)
                v.copy_(a)
                self.views.append(v)
                spec_in.append({"slot": s.to_json()})
            else:
                self.views.append(a)
                spec_in.append({"value": a})
        self.out_slots = [next(out_tensor_slots) if d.shape(spec, axes) is not None else None
                          for spec in d.outputs.values()]
        self.out_views = [self.arena.view(s) if s is not None else None for s in self.out_slots]
        self.judge.sync()
        # The runner maps an arena once; a placement in the arena it already has sends no descriptor
        # (on a GPU a new arena is cuMemCreate, export, reserve, map and set-access here and there).
        self._ask("arena", protocol.EmptyReply, fds=[] if self.mapped else [self.arena.fd], size=self.arena.size,
                  inputs=spec_in, reuse=self.mapped, dps=self.dps,
                  outputs=[{"slot": s.to_json()} if s is not None else {"scalar": True} for s in self.out_slots])
        self.mapped = True

    def _fits(self, size: int) -> bool:
        """The current arena can take a placement of ``size`` bytes (:func:`_keeps`)."""
        return self.arena is not None and _keeps(self.arena.size, size)

    def _new_arena(self, size: int) -> None:
        self.close()
        self.arena = new_arena(self.judge.device, size)

    def reserve(self, sizes: list[int]) -> None:
        """An arena for the largest of the placements to come (one phase's workloads), so that they
        share one: on a GPU each new arena is a cuMemCreate, an export and a map on both sides."""
        if not sizes:
            return
        size = max(sizes)
        if not all(_keeps(size, n) for n in sizes):
            return  # too far apart to share one arena: each gets its own, as they come
        if not all(self._fits(n) for n in sizes):
            self._new_arena(size)

    def seen(self) -> list[Any]:
        return self.views

    def _ask(self, op: str, model: type, timeout: float | None = None, **payload):
        try:
            msg = self.client.request(op, timeout=self.timeout_s if timeout is None else timeout,
                                      on_event=self.on_event, **payload)
        except RunnerDied as e:
            tail = self.client.log_tail()
            reason = f"the candidate's runner {e} (request {op!r})" + (f"; its output ended with:\n{tail}" if tail else "")
            raise Refused("TIMEOUT" if e.timeout else "RUNTIME_ERROR", reason) from None
        except ProtocolError as e:
            raise Refused("REJECTED", f"[protocol] {e}") from None
        try:
            return protocol.parse(model, msg)
        except ValueError as e:
            raise Refused("REJECTED", f"[protocol] the runner's reply to {op!r} is not valid: {e}") from None

    def _outputs(self, descs: list) -> tuple[list[Any] | None, Check | None]:
        """The outputs the runner left in the arena, as judge-owned copies; a wrong kind of output is
        the check's verdict (the judge compares only what lies in its own slots)."""
        d = self.judge.d
        names = list(d.outputs)
        if len(descs) != len(names):
            raise Refused("REJECTED", f"[protocol] a call reported {len(descs)} outputs; the definition has {len(names)}")
        out: list[Any] = []
        for name, spec, desc, slot, view in zip(names, d.outputs.values(), descs, self.out_slots, self.out_views,
                                                strict=True):
            if slot is None:  # a scalar output
                if desc.value is None or isinstance(desc.value, bool) and spec.dtype != "bool":
                    return None, Check("INCORRECT_SHAPE", f"output {name!r}: expected a scalar, got "
                                       f"{desc.type or ('a tensor of shape ' + str(tuple(desc.shape or ())))}")
                out.append(desc.value)
                continue
            if desc.shape is None:
                return None, Check("INCORRECT_SHAPE", f"output {name!r}: expected a tensor of shape {slot.shape}, "
                                   f"got {desc.type or 'a number'}")
            if tuple(desc.shape) != slot.shape:
                return None, Check("INCORRECT_SHAPE", f"output {name!r}: shape {tuple(desc.shape)}, expected {slot.shape}")
            if desc.dtype != slot.dtype:
                return None, Check("INCORRECT_DTYPE", f"output {name!r}: dtype {desc.dtype}, expected {slot.dtype}")
            want_device = torch.device(self.judge.device).type
            if desc.device != want_device:
                return None, Check("RUNTIME_ERROR", f"output {name!r} is on {desc.device}, expected {want_device}")
            if not desc.stored:
                raise Refused("REJECTED", f"[protocol] output {name!r} matched its slot but was not stored")
            out.append(view.clone())
        return out, None

    def _poison_outputs(self) -> None:
        for v in self.out_views:
            if v is not None:
                _poison(v)

    def call(self, warm: bool = False) -> Called:
        self._poison_outputs()
        self.judge.sync()
        r = self._ask("call", protocol.CallReply, warm=warm, release=self.release)
        if r.error and r.finding:  # it raised after a refused hook: the attempt is the verdict, not the error
            return Called(finding=r.finding[:4000])
        if r.error:
            return Called(error=r.error, compile_error=r.compile_error)
        outputs, wrong = self._outputs(r.outputs)
        evidence = {"ops": r.ops, "threads": r.threads, "native_threads": r.native_threads, "launches": r.launches}
        return Called(outputs=outputs, wrong=wrong, finding=r.finding[:4000], evidence=evidence)

    def close(self) -> None:
        if self.arena is not None:
            self.judge.sync()
            self.arena.close()
            self.arena = None
            self.mapped = False


class _RemoteTimer(Remote):
    """The candidate's turn in the timing rotation: fresh inputs, one timed call in the runner, and
    (for the calls chosen secretly) the judge's check of what that call computed."""

    def __init__(self, judge: Judge, subject: RemoteSubject, w: Workload, axes: dict[str, int], p: dict,
                 trusted: bool = False):
        self.judge, self.subject, self.w, self.axes = judge, subject, w, axes
        # a trusted row's own code in its runner (Judge.timing_subject): the same turn, minus the audits
        # and output checks (its outputs were checked by the judge; a peer may call torch ops)
        self.trusted = trusted
        rng = random.Random(f"{judge.seed}:{w.uuid}:timed-checks")
        self.rng = rng
        forced = rng.sample(range(max(2, p["min_reps"])), 2)
        self.forced = set(forced)
        self.failure: dict | None = None
        self.checked = 0
        self.last_fresh: list[Any] | None = None  # the inputs of the latest timed call, the judge's copy

    def prepare(self, warmup: int, block: bool = False) -> tuple[bool, str]:
        r = self.subject._ask("time", protocol.TimeReply, warmup=warmup, graphs=True, block=block)
        if r.finding:  # first: a refused hook raises in the candidate's call, and the attempt is the verdict
            raise Refused("REJECTED", "before timing: " + r.finding)
        if r.error:
            raise Refused("RUNTIME_ERROR", r.error)
        self._ops(r.ops, "in the warm-up and capture before timing")
        return r.graph, r.graph_error

    def _ops(self, ops: dict[str, int], when: str) -> None:
        if self.trusted:
            return
        bad = self.judge.forbidden_ops(ops)
        if bad:
            raise Refused("REJECTED", f"[torch-compute] {when} the candidate called torch ops that compute: {bad}")

    def rep(self, rep: int) -> tuple[float, float | None, float | None]:
        judge, subject = self.judge, self.subject
        fresh = make_inputs(judge.task, self.w, judge.seed + 0x71AE + rep, judge.device)
        subject.refill(fresh)
        if subject.dps:
            subject._poison_outputs()
        judge.sync()
        # the runner's no-op every NOOP_EVERY-th rep (in alternating order): the tails' baseline needs a
        # median, not a sample per rep
        noop = rep % NOOP_EVERY == 0
        r = subject._ask("rep", protocol.RepReply, noop=noop, noop_first=bool((rep // NOOP_EVERY) % 2))
        if r.finding:  # first, as in prepare
            raise Refused("REJECTED", f"in timed call {rep + 1}: {r.finding}")
        if r.error:
            raise Refused("RUNTIME_ERROR", "during timing: " + r.error)
        if r.ms is None:
            raise Refused("REJECTED", "[protocol] a timed call reported no time")
        self._ops(r.ops, f"in timed call {rep + 1}")
        self.last_fresh = fresh
        check = rep in self.forced or self.rng.random() < CHECK_PROBABILITY
        self.uncharged_s = 0.0
        if check and self.failure is None and not self.trusted:
            t0 = time.perf_counter()
            self._check(fresh, rep)  # the judge's audit (the reference on the fresh inputs): not the row's wall time
            self.uncharged_s = time.perf_counter() - t0
        return r.ms, r.tail_ms, r.noop_tail_ms

    def _check(self, fresh: list[Any], rep: int) -> None:
        # inputs are read-only in timed calls too: the trusted rows of the rotation read the same arena
        mutated = self.judge._mutated(fresh, self.subject)
        if mutated:
            self.failure = {"status": "REJECTED", "gate": "timing", "reason": f"in timed call {rep + 1}: {mutated}"}
            return
        c = self.subject._ask("collect", protocol.CollectReply)
        if c.finding:
            self.failure = {"status": "REJECTED", "gate": "timing", "reason": f"after timed call {rep + 1}: {c.finding}"}
            return
        outputs, wrong = self.subject._outputs(c.outputs)
        self.checked += 1
        verdict = wrong or self.judge.judge_outputs(outputs, fresh, self.axes)
        if verdict.status != "PASSED":
            self.failure = {"status": "REJECTED", "gate": "timing", "reason": (
                f"[timed-output] the outputs of timed call {rep + 1} (fresh inputs, checked after the call) are "
                f"wrong, while the checks before timing passed: {verdict.reason}")}


BESIDE = "beside:"  # timing rows of trusted functions timed beside a candidate (Judge.beside)


class Judge:
    """Checks and times one subject on the workloads of one task, from one secret seed."""

    def __init__(self, task: Task, subject: Subject | None, reference: Callable, baseline: Callable | None,
                 device: str, seed: int, role: str = "candidate", language: str = "python"):
        self.task, self.subject, self.reference, self.baseline = task, subject, reference, baseline
        self.device, self.seed, self.role, self.language = device, seed, role, language
        self.d = task.definition
        # trusted rows timed beside a remote candidate, in its rotation (``--peers-beside``):
        # name -> (function, prepare or None); each reads its own copy of the inputs in an arena of the
        # judge's (the same kind of memory as the candidate's, never mapped by its runner)
        self.beside: dict[str, tuple[Callable, Callable[..., tuple] | None]] = {}
        self.beside_failed: dict[str, str] = {}  # name -> why it could not be timed beside (kept out after)
        # a trusted row's own code in a runner of its own (``--trusted-timing runner``): its timed calls go
        # there, as a candidate's do; its checks stay with ``subject``, in this process
        self.timing_subject: RemoteSubject | None = None

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def alloc_outputs(self, axes: dict[str, int]) -> list[torch.Tensor]:
        outs = []
        for name, spec in self.d.outputs.items():
            shape = self.d.shape(spec, axes)
            if shape is None:
                raise TypeError(f"output {name!r} is a scalar; destination-passing style needs tensor outputs")
            outs.append(_poison(torch.empty(shape, dtype=torch_dtype(spec.dtype), device=self.device)))
        return outs

    def reference_outputs(self, inputs: list[Any]) -> tuple[list[Any], str]:
        """The reference in float64 where its ops allow, else in the inputs' own precision; in the
        inputs' own precision always when a request's own judge asks for it (``[[check]] kind =
        "python"``, ``reference = "native"``): its tolerances were set against that run."""
        native = wants_native_reference(self.task.contract)

        def compute() -> tuple[list[Any], str]:
            if not native:
                try:
                    return normalize_outputs(self.reference(*_upcast(inputs)), self.d), "float64"
                except (RuntimeError, TypeError, NotImplementedError):
                    pass
            return normalize_outputs(self.reference(*_clone(inputs)), self.d), "native"

        # a slow reference (the linear-attention tasks' token loops) runs once per distinct inputs,
        # not once per solution checked on them (refcache's docstring)
        try:
            out = refcache.cached_call(compute, inputs, self.d.reference, native, self.device)
        except torch.OutOfMemoryError:
            # the device is shared with the other jobs' judges and runners: a holdout's reference (the LeapQuant
            # step's at batch 4097 makes 8 GiB temporaries) failed on the H200 while another judge's cache held
            # 85-101 GiB. Give back this process's cache, let the others move on, and run it once more.
            _give_back_cuda_cache(self.device)
            time.sleep(OOM_RETRY_S)
            out = refcache.cached_call(compute, inputs, self.d.reference, native, self.device)
        _give_back_cuda_cache(self.device, only_above=CACHE_KEEP_FRACTION)
        return out

    def _compare(self, outputs: list[Any], expected: list[Any], axes: dict[str, int], inputs: list[Any],
                 floor: dict[str, float] | None = None) -> Check:
        return compare(outputs, expected, self.d, self.task.contract, axes, self.device, inputs,
                       atol_floor=floor, task_root=self.task.root)

    def arena_bytes(self, w: Workload) -> int:
        """The arena a placement of ``w``'s inputs and outputs takes (its tensors' shapes from the definition)."""
        axes = self.d.axis_values(w.axes)
        specs = [(shape, spec.dtype) for spec in [*self.d.inputs.values(), *self.d.outputs.values()]
                 if (shape := self.d.shape(spec, axes)) is not None]
        return layout(specs)[1]

    def judge_outputs(self, outputs: list[Any], inputs: list[Any], axes: dict[str, int]) -> Check:
        expected, _ = self.reference_outputs(inputs)
        self.sync()
        return self._compare(outputs, expected, axes, inputs)

    # -- evidence from the runner ----------------------------------------------------------------
    def _evidence(self, called: Called, warm: bool) -> str:
        if not self.subject.audited:
            return ""
        if called.finding:
            return called.finding
        ev = called.evidence
        ops = self.forbidden_ops(ev.get("ops") or {})
        if ops:
            return (f"[torch-compute] the candidate called torch ops that compute (or ops of a custom namespace): "
                    f"{ops}. A solution must compute in its own kernels (allocation, views and metadata are "
                    "allowed; contract.toml [integrity] allowed_torch_ops may allow more, by qualified name)")
        threads = ev.get("threads")
        if threads and threads[1] > threads[0]:
            return f"[threads] the call left {threads[1] - threads[0]} more Python thread(s) running"
        native = ev.get("native_threads")
        if warm and native and native[0] >= 0 and native[1] > native[0]:
            return (f"[threads] the call left {native[1] - native[0]} more native thread(s) running "
                    "(work outside the timed stream)")
        return ""

    def _no_kernel(self, called: Called) -> str:
        """Right outputs and no kernel launched (no Triton launch counted): computed on the host, or
        cached. Asked after the comparison, so a wrong answer is reported as what it is."""
        if not self.subject.audited or self.language not in ("python", "triton") \
                or self.task.contract.integrity.allowed_torch_ops:
            return ""
        if any(v is not None and v.numel() == 0 for v in getattr(self.subject, "out_views", [])):
            return ""  # nothing to compute: an honest kernel may skip its launch
        if any((called.evidence.get("launches") or {}).values()):
            return ""
        return ("[no-kernel] the call launched no kernel (no Triton launch): a `python` or `triton` solution "
                "must compute in a kernel it launches, not on the host or through a library the contract does "
                "not name ([integrity] allowed_torch_ops)")

    def forbidden_ops(self, ops: dict[str, int]) -> str:
        """The ops outside the allowlist (allocation, views, metadata; the contract's additions, by
        qualified name or, for aten, bare), most frequent first; "" when none."""
        allowed = ALLOWED_OPS | {op if "::" in op else f"aten::{op}"
                                 for op in self.task.contract.integrity.allowed_torch_ops}
        bad = {n: c for n, c in ops.items() if n not in allowed}
        return ", ".join(f"{n} x{c}" for n, c in sorted(bad.items(), key=lambda x: -x[1])[:8])

    def _mutated(self, pristine: list[Any], subject: Any = None) -> str:
        seen = (subject or self.subject).seen()
        for name, before, after in zip(self.d.inputs, pristine, seen, strict=True):
            if isinstance(before, torch.Tensor) and not bitwise_equal(before, after)[0]:
                return f"[input-mutation] the candidate modified its input {name!r} (inputs are read-only)"
        return ""

    # -- gates ---------------------------------------------------------------------------------
    def check(self, w: Workload, salt: int = 0, draws: bool = True) -> dict:
        """Correctness and integrity on one workload, on each input set of the contract (the inputs
        made for the workload, then ``[[inputs.sets]]``); ``salt`` draws fresh values for all.
        ``draws``: also run the checkers judged over many calls (a sampler's distribution), on each set."""
        axes = self.d.axis_values(w.axes)
        native = lambda inputs: normalize_outputs(self.reference(*_clone(inputs)), self.d)  # noqa: E731
        sets = input_sets(self.task, w, self.seed + salt, self.device, native)
        made: dict[str, list[Any]] = {}
        merged: dict | None = None
        for name, make in sets:
            where = f" of input set {name!r}" if len(sets) > 1 else ""
            try:
                inputs = made[name] = make(made)
            except Exception as e:  # noqa: BLE001 - the task's generator or reference, not the candidate
                return {"status": "RUNTIME_ERROR", "gate": "reference",
                        "reason": f"making the inputs{where} failed (the task's inputs or code, not the candidate): "
                                  f"{candidate_traceback(e)[-2000:]}"}
            result = self._check_inputs(axes, inputs, w.uuid.startswith(STRESS_PREFIX), draws)
            if result["status"] != "PASSED":
                if where:
                    result["reason"] = f"[input set {name!r}] " + result["reason"]
                return result
            merged = result if merged is None else _merge(merged, result)
        return merged

    def _reference_shapes(self, expected: list[Any], axes: dict[str, int]) -> str:
        """Why the reference's outputs are not what the definition says at these axes ("" when they
        are): a shape the task itself cannot produce (an FFT c2r request's odd nx, where its
        reference returns 2 * (nf - 1) columns) must not be held against a candidate."""
        for (name, spec), out in zip(self.d.outputs.items(), expected, strict=False):
            want = self.d.shape(spec, axes)
            if want is not None and isinstance(out, torch.Tensor) and tuple(out.shape) != want:
                return (f"[reference-shape] the task's reference returns output {name!r} of shape {tuple(out.shape)} "
                        f"where the definition says {want} at {self.d.axis_values(axes)} (not the candidate's fault)")
        return ""

    def _check_inputs(self, axes: dict[str, int], inputs: list[Any], stress: bool = False, draws: bool = True) -> dict:
        pristine = _clone(inputs)
        # The reference first: what it cannot do at these axes is the task's failure, whatever the candidate does.
        try:
            expected, precision = self.reference_outputs(pristine)
            self.sync()
        except Exception as e:  # noqa: BLE001
            return {"status": "RUNTIME_ERROR", "gate": "reference",
                    "reason": f"the task's reference failed (not the candidate's fault): {candidate_traceback(e)}"}
        bad = self._reference_shapes(expected, axes)
        if bad:
            return {"status": "RUNTIME_ERROR", "gate": "reference", "reason": bad, "reference_shape": True}
        self.subject.place(inputs, axes)
        called = self.subject.call()
        if called.error:
            status = "COMPILE_ERROR" if called.compile_error else "RUNTIME_ERROR"
            hint = "" if called.compile_error else calling_convention_hint(
                called.error, self.subject.dps, len(self.d.inputs), len(self.d.outputs))
            return {"status": status, "gate": "build" if called.compile_error else "correctness",
                    "reason": called.error + hint}
        cheat = self._evidence(called, warm=False) or (self._mutated(pristine) if self.subject.audited else "")
        if cheat:
            return {"status": "REJECTED", "gate": "integrity", "reason": cheat}
        if called.wrong is not None:
            return {"status": called.wrong.status, "gate": "correctness", "reason": called.wrong.reason}
        # stress inputs: no atol below what the reference's own float32 math costs on them
        floor = atol_floor(self.d, self.reference, pristine, expected) if stress else None
        c = self._compare(called.outputs, expected, axes, pristine, floor)
        if c.status != "PASSED" and self.subject.dps and _untouched(called.outputs):
            c.reason += ("\n[calling-convention] no element of any output was written (each is still what the judge "
                         "filled it with before the call): a run that returns its outputs instead of writing them? The "
                         "solution's spec asks for destination-passing style; if run returns its outputs, set "
                         "\"destination_passing_style\": false in the spec.")
        if c.status == "INCORRECT_NUMERICAL" and self.subject.audited:
            race = self._race(pristine, called.outputs)
            if race:
                c.reason += "\n" + race
        result = {"status": c.status, "gate": "correctness", "reason": c.reason, "max_abs_error": c.max_abs_error,
                  "max_rel_error": c.max_rel_error, "reference_precision": precision}
        if c.judge_ratio is not None:
            result["request_judge_ratio"] = c.judge_ratio
        if c.status == "PASSED" and self._no_kernel(called):
            return {"status": "REJECTED", "gate": "integrity", "reason": self._no_kernel(called)}
        if c.status == "PASSED" and self.subject.audited:
            again = self._repeat(pristine, called.outputs, expected, axes, floor)
            if again:
                return {"status": "REJECTED", "gate": "integrity", "reason": again}
        if c.status == "PASSED" and draws:
            drawn = self._draws(pristine, axes)
            if drawn is not None:
                if drawn["status"] != "PASSED":
                    return drawn
                result["max_abs_error"] = max(result["max_abs_error"], drawn["max_abs_error"])
        return result

    def _draws(self, pristine: list[Any], axes: dict[str, int]) -> dict | None:
        """Checkers judged over many calls (``sampling``): the subject is called on their (tiled) inputs
        as often as they ask, each call's outputs checked, then the tally judged. None when none asks."""
        from kernelcraft.gauntlet.checkers import checkers_for

        worst, ran = 0.0, False
        for checker in checkers_for(self.d, self.task.contract):
            plan = checker.draw_plan(self.d, axes, pristine)
            if plan is None:
                continue
            ran = True
            self.subject.place(plan.inputs, plan.axes)
            for n in range(plan.calls):
                called = self.subject.call(warm=True)
                where = f"call {n + 1} of {plan.calls} drawing samples ({checker.kind} check)"
                if called.error:
                    return {"status": "RUNTIME_ERROR", "gate": "correctness", "reason": f"{where}: {called.error}"}
                cheat = self._evidence(called, warm=True)
                if cheat:
                    return {"status": "REJECTED", "gate": "integrity", "reason": f"{where}: {cheat}"}
                if called.wrong is not None:
                    return {"status": called.wrong.status, "gate": "correctness", "reason": f"{where}: {called.wrong.reason}"}
                bad = plan.absorb(dict(zip(self.d.outputs, called.outputs, strict=True)))
                if bad is not None:
                    return {"status": bad.status, "gate": "correctness", "reason": f"{where}: {bad.reason}"}
            verdict = plan.finish()
            if verdict.status != "PASSED":
                return {"status": verdict.status, "gate": "correctness", "reason": verdict.reason,
                        "max_abs_error": verdict.max_abs_error}
            worst = max(worst, verdict.max_abs_error)
        return {"status": "PASSED", "max_abs_error": worst} if ran else None

    def _race(self, pristine: list[Any], first: list[Any]) -> str:
        """For a numerical failure: a second call on identical inputs, compared bit for bit with the first.
        Where they differ, the wrong values may be a race's (or unwritten memory's) and not the arithmetic's:
        session 25's gdn_prefill misses on an H100, blamed for two sessions on GPU rounding, were a race that the
        determinism gate (it runs only after the checks pass) never reached. "" when the calls agree, when the
        contract allows nondeterminism, or when the second call fails otherwise (the first failure stands)."""
        contract = self.task.contract
        if not contract.integrity.deterministic:
            return ""
        self.subject.refill(pristine)
        second = self.subject.call(warm=True)
        if second.error or second.wrong is not None or self._evidence(second, warm=True):
            return ""
        diff = self._first_difference(first, second.outputs)
        if diff is None:
            return ""
        return (f"[nondeterminism] output {diff[0]!r}: a second call on identical inputs differs from the first in "
                f"{diff[1]} element(s): the wrong values may come from a race or from memory the solution never "
                "wrote, not from its arithmetic; make it repeatable first")

    def _first_difference(self, first: list[Any], second: list[Any]) -> tuple[str, int] | None:
        """The first output whose two calls differ bit for bit (in the checkers' canonical form), with how many
        elements differ; None when they agree."""
        contract = self.task.contract
        a = canonical_outputs(first, self.d, contract)
        b = canonical_outputs(second, self.d, contract)
        for name, x, y in zip(self.d.outputs, a, b, strict=True):
            same, n = bitwise_equal(x, y)
            if not same:
                return name, n
        return None

    def _repeat(self, pristine: list[Any], first: list[Any], expected: list[Any], axes: dict[str, int],
                floor: dict[str, float] | None = None) -> str:
        """A second call on identical inputs: bit for bit equal to the first (in the checkers'
        canonical form); where the contract says ``deterministic = false``, it must pass the checks again."""
        self.subject.refill(pristine)
        second = self.subject.call(warm=True)
        if second.error:
            return f"[nondeterminism] a second call on the same inputs raised: {second.error}"
        cheat = self._evidence(second, warm=True) or self._mutated(pristine)
        if cheat:
            return cheat
        if second.wrong is not None:
            return f"[nondeterminism] a second call on identical inputs: {second.wrong.reason}"
        if not self.task.contract.integrity.deterministic:
            c = self._compare(second.outputs, expected, axes, pristine, floor)
            return "" if c.status == "PASSED" else f"[nondeterminism] a second call on identical inputs: {c.reason}"
        diff = self._first_difference(first, second.outputs)
        if diff is None:
            return ""
        return (f"[nondeterminism] output {diff[0]!r}: a second call on identical inputs differs in {diff[1]} "
                "element(s) (uninitialised memory, a race, or state kept between calls); "
                "contract.toml [integrity] deterministic = false allows it where atomics make it unavoidable")

    def _extra_warmup(self, w: Workload) -> int:
        """0-3 more warm-up calls, drawn from the run's secret seed: how many calls precede the
        capture and the timed replays cannot be predicted by candidate code that counts its calls."""
        return random.Random(f"{self.seed}:{w.uuid}").randrange(4)

    def time(self, w: Workload, **policy: Any) -> dict:
        axes = self.d.axis_values(w.axes)
        inputs = make_inputs(self.task, w, self.seed, self.device)
        p = self.task.contract.timing.model_dump() | policy
        if not self.device.startswith("cuda"):
            # The interpreter is slow; a handful of wall-clock samples is all a CPU row can claim.
            p["min_reps"] = min(p["min_reps"], 3)
        subject = self.timing_subject or self.subject
        subject.place(inputs, axes)
        shared = subject.seen()  # what trusted functions time on: the same tensors
        fns: dict[str, Callable[[], object]] = {}
        remote: dict[str, Remote] = {}
        timer = None
        if isinstance(subject, RemoteSubject):
            timer = remote["candidate"] = _RemoteTimer(self, subject, w, axes, p,
                                                       trusted=subject is self.timing_subject)
        else:
            fns["candidate"] = self.subject.timed()
        if self.role != "baseline" and self.baseline is not None:
            fns["baseline"] = lambda: self.baseline(*shared)
        if p["time_reference"]:  # the contract's [timing] time_reference
            fns["reference"] = lambda: self.reference(*shared)
        beside_arena = None
        if timer is not None and self.beside:
            beside_arena = self._beside(fns, inputs)
        try:
            t = time_interleaved(fns, self.device, budget_ms=p["budget_ms"], min_reps=p["min_reps"],
                                 max_reps=p["max_reps"], warmup=p["warmup"] + self._extra_warmup(w), remote=remote,
                                 local_tails=timer is None,  # only the candidate's tail is judged
                                 # the reference's time is informational (x reference): min_reps of it, not a
                                 # third of every rotation's wall bound (issue 19's throughput)
                                 brief=("reference",))
        except Refused:
            raise  # the runner's protocol or death: the job's verdict, handled by the worker
        except BaseException as e:  # noqa: BLE001
            return {"status": "RUNTIME_ERROR", "gate": "timing", "reason": candidate_traceback(e)}
        finally:
            if beside_arena is not None:
                self.sync()
                beside_arena.close()
        if timer is not None and timer.failure is not None:
            return timer.failure
        if timer is not None and not timer.trusted and timer.last_fresh is not None:
            # every timed call's inputs, not only the checked ones': the arena still holds the last call's
            mutated = self._mutated(timer.last_fresh, subject)
            if mutated:
                return {"status": "REJECTED", "gate": "timing", "reason": "after the timed calls: " + mutated}
        cand = t["candidate"]
        if self.subject.audited and cand.escaped_ms is not None and \
                cand.escaped_ms > ESCAPE_MS + ESCAPE_FRACTION * cand.median_ms:
            return {"status": "REJECTED", "gate": "timing", "reason": (
                f"[escaped-timer] after the end event the device stayed busy {cand.escaped_ms:.4f} ms longer than "
                f"after a no-op (the events measured {cand.median_ms:.4f} ms): work on another stream or a "
                "deferred launch escaped the timer")}
        # Check again after timing, on fresh values of the same shapes: a kernel that is right once and
        # wrong when called repeatedly, or that caches outputs by pointer, shape or value, fails here.
        again = self.check(w, salt=0x5EED, draws=False)
        if again["status"] != "PASSED":
            again["reason"] = "after timing: " + again["reason"]
            again["gate"] = "timing" if again["gate"] == "correctness" else again["gate"]
            return again
        # The baseline row is its own baseline (speedup 1); a candidate whose task's baseline could not
        # be loaded here has none: its speedup_vs_baseline stays None, never 1 by default.
        base = t["baseline"] if "baseline" in t else cand if self.role == "baseline" else None
        out = {"status": "PASSED", "gate": "timing", "latency_ms": cand.median_ms,
               "baseline_latency_ms": base.median_ms if base is not None else None,
               "reference_latency_ms": t["reference"].median_ms if "reference" in t else None,
               "timing": cand.to_dict()}
        if timer is not None and not timer.trusted:
            out["timing"]["checked_reps"] = timer.checked
        beside = {n.removeprefix(BESIDE): t[n].median_ms for n in t if n.startswith(BESIDE) and t[n].median_ms}
        if beside:
            out["beside_ms"] = beside
        return out

    def _beside(self, fns: dict[str, Callable[[], object]], inputs: list[Any]):
        """Add each trusted row of ``self.beside`` to ``fns`` (as ``beside:NAME``), on a copy of ``inputs`` in
        an arena of this process, after one untimed call (a torch.compile row compiles there; a row that
        raises is left out, with why, from this and every later workload). Returns the arena (closed by
        the caller once timed) or None."""
        tensors = [(tuple(a.shape), dtype_name(a.dtype)) for a in inputs if isinstance(a, torch.Tensor)]
        slots, size = layout(tensors)
        arena = new_arena(self.device, max(size, 1))
        it = iter(slots)
        args = []
        for a in inputs:
            if isinstance(a, torch.Tensor):
                v = arena.view(next(it))
                v.copy_(a)
                args.append(v)
            else:
                args.append(a)
        self.sync()
        for name, (fn, prep) in list(self.beside.items()):
            try:
                call_args = tuple(prep(*args)) if prep is not None else tuple(args)
                fn(*call_args)
                self.sync()
            except BaseException as e:  # noqa: BLE001 - a trusted row that fails beside is left out, saying why
                self.beside_failed[name] = candidate_traceback(e)[-600:]
                del self.beside[name]
                continue
            fns[BESIDE + name] = lambda fn=fn, call_args=call_args: fn(*call_args)
        return arena
