"""The gauntlet, parent side: static gate here, everything that runs code in a fresh worker.

Solutions are spread over the devices by an executor (:mod:`kernelcraft.worker.executor`) and
recorded here, in the order given. Order for every candidate: static -> build -> correctness on every workload (stops at the first
failure) -> timing of every workload (candidate, baseline and reference interleaved), each
followed by a recheck of the outputs -> verdict (speedups, weighted geometric mean, promotion).
"""

from __future__ import annotations

import datetime as dt
import secrets
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from kernelcraft import HARNESS_VERSION
from kernelcraft.gauntlet.holdout import holdout_workloads, large_holdout, stress_workloads
from kernelcraft.gauntlet.records import EvalReport, SolutionResult, WorkloadResult, weighted_geomean
from kernelcraft.gauntlet.static import allowed_groups, check_static
from kernelcraft.measure.calibrate import Calibration
from kernelcraft.measure.environment import environment
from kernelcraft.measure.stability import PLACEMENT_MS, SPREAD_MAX, asymmetry_ms, unsettled, unsettled_at
from kernelcraft.measure.timing import TIMING_VERSION
from kernelcraft.solution.model import BuildSpec, Solution, SourceFile, pack_python_file
from kernelcraft.task.loader import Task
from kernelcraft.task.sources import task_sources
from kernelcraft.task.workload import Workload
from kernelcraft.worker.child import Job
from kernelcraft.worker.executor import Done, Executor, Started, make_executor
from kernelcraft.worker.pool import JobOutcome


@dataclass
class Options:
    device: str = "cpu"
    seed: int | None = None  # None: a fresh secret seed, recorded in the report
    workload_timeout_s: float | None = None  # None: the contract's
    build_timeout_s: float | None = None
    cpu_max_mb: float = 16.0  # on cpu, skip workloads moving more than this many MB
    time_it: bool = True
    timing: dict | None = None  # overrides of the contract's [timing]
    workloads: list[str] | None = None  # uuid prefixes to run; None: all
    calibrate: bool = True  # speed-of-light fractions and the impossible-speed gate (cached per device)
    warm_spare: bool | None = None  # start the next worker early; None: when more solutions are queued
    executor: str = "local"  # local, ray or ray:ADDRESS (kernelcraft.worker.executor)
    devices: list[int] | None = None  # with device "cuda": indices of the visible GPUs to use; None: all
    workers: int | None = None  # with device "cpu": CPU workers side by side; None: the default (1)
    overlap: bool = True  # on a GPU, build the next candidate while the current one holds the GPU
    sanitize: tuple[str, ...] = ()  # compute-sanitizer tools run on candidates that pass (CUDA only)
    # GPU: confirm each candidate's timing out of process with Nsight Compute (gauntlet/confirm.py);
    # without it a GPU candidate is not promotable. `eval` asks for it; the design loop at promotion.
    confirm: bool = False
    # time every peer and torch.compile row a second time beside each candidate, in its rotation, on an arena
    # of the judge's (the same kind of memory as the candidate's); x best peer then compares rows timed under
    # the same conditions (measure/stability.py: the asymmetry it removes)
    peers_beside: bool = False
    # where trusted rows (baseline, torch.compile, peers) time their calls: "judge" (in the judging process) or
    # "runner" (each in a runner process of its own, the candidate's path: inputs the judge writes to a shared
    # arena, a sync, the hop; measure/stability.py, AGENTS.md sessions 23-24: the candidate's handicap) or "auto"
    # (runner where rows are timed on a GPU without peers_beside, else judge: `resolved_trusted_timing`)
    trusted_timing: str = "auto"
    # Triton candidates: their kernels compiled for sm_90 in a process of their own (measure/triton_static.py) and
    # the TTGIR read for the pipelined-loop race of session 26; a race makes the candidate not promotable (the
    # verdict stays the gates'). `eval` turns it on for GPU runs; `--lint` on CPU.
    lint: bool = False


def resolved_trusted_timing(opts: Options) -> str:
    """``auto`` -> ``runner`` when rows are timed on a GPU and not again beside each candidate, else ``judge``.

    Why runner by default (H100, 2026-12-07, results/h100/catalog-2026-12-07-s24/): a candidate's own code timed as
    a trusted row by the judge read 0.23-0.38 us faster (median over workloads) than the same code timed as a
    candidate; timed in runners of their own the gap was -0.05 to +0.10 us (rmsnorm, silu_mul, layernorm)."""
    if opts.trusted_timing in ("judge", "runner"):
        return opts.trusted_timing
    return "runner" if opts.time_it and opts.device.startswith("cuda") and not opts.peers_beside else "judge"


def static_gate_off() -> bool:
    """Tests of the run-time defences switch the static gate off to reach them with fixtures the
    static gate would refuse first (KERNELCRAFT_TEST_NO_STATIC_GATE=1); every record says so."""
    import os

    return os.environ.get("KERNELCRAFT_TEST_NO_STATIC_GATE") == "1"


def _skip_reason(task: Task, w: Workload, opts: Options) -> str:
    if opts.device.startswith("cuda"):
        return ""
    mb = task.io_bytes(w.axes) / 1e6
    if mb > opts.cpu_max_mb:
        return (f"moves {mb:.0f} MB, over the CPU limit of {opts.cpu_max_mb:g} MB "
                "(run with --device cuda, or raise --cpu-max-mb)")
    return ""


def baseline_solution(task: Task) -> Solution:
    return pack_python_file(task.baseline_path, task.definition.name, name="baseline", author="task")


COMPILE_MODES = ("default", "max-autotune-no-cudagraphs", "reduce-overhead", "max-autotune", "dynamic")


def compile_solution_name(mode: str = "default") -> str:
    """The row name of the torch.compile row in ``mode``."""
    return "torch.compile" if mode == "default" else f"torch.compile({mode})"


def compile_solution(task: Task, mode: str = "default") -> Solution:
    """The reference under torch.compile: one graph per workload shape (``dynamic=False``), in
    ``mode``; ``dynamic`` is the old behaviour, one graph with symbolic sizes for every shape."""
    name = compile_solution_name(mode)
    return Solution(
        name=name, definition=task.definition.name, author="torch",
        spec=BuildSpec(language="python", entry_point="reference.py::run", destination_passing_style=False),
        sources=[SourceFile(path="reference.py", content=task.definition.reference)],
        description=f"the definition's reference under torch.compile (mode {mode})",
    )


def compile_entry(task: Task, mode: str = "default") -> tuple[str, Solution, str, dict]:
    options = {"compile_dynamic": True} if mode == "dynamic" else \
        {"compile_mode": None if mode == "default" else mode}
    return "torch.compile", compile_solution(task, mode), "definition.json:reference", options


def peer_entries(task: Task, only: list[str] | None = None) -> list[tuple[str, Solution, str, dict]]:
    """One row per ``peers/*.py`` of the task (whether it can run here is the worker's to say);
    ``only``: these peer names."""
    from kernelcraft.task.peers import read_specs

    out = []
    for spec in read_specs(task.root):
        if only and spec.name not in only:
            continue
        sol = pack_python_file(spec.path, task.definition.name, name=spec.row, author=spec.library)
        out.append(("peer", sol, str(spec.path), {"peer": spec.name}))
    return out


TRUSTED_ROLES = ("baseline", "torch.compile", "peer")


def timed_beside(role: str, name: str) -> bool:
    """A trusted row ``--peers-beside`` times again beside each candidate: a peer or a static torch.compile
    row (the dynamic one, ``compile_entry(task, "dynamic")``, is the weak row no verdict stands on)."""
    return role == "peer" or (role == "torch.compile" and name != compile_solution_name("dynamic"))


def evaluate(task: Task, entries: list[tuple[str, Solution, str]], opts: Options,
             on_progress: Callable[[str, str], None] | None = None,
             on_result: Callable[[EvalReport], None] | None = None,
             executor: Executor | None = None,
             on_phase: Callable[[str, str, str | None, int, int], None] | None = None) -> EvalReport:
    """Evaluate each (role, solution, path); roles: candidate, baseline, torch.compile. The solutions
    run on every device of ``opts`` at once (or on ``executor``); the report lists them in the order
    given, each appended (and ``on_result`` called) as soon as it and every one before it are done.
    ``on_phase(name, gate, uuid, step, steps)``: a solution's worker began phase ``step`` of its
    ``steps`` (build, each workload's correctness, each holdout, each workload's timing), called
    from the executor's threads, for a progress display."""
    seed = opts.seed if opts.seed is not None else secrets.randbits(63)
    report, cal = new_report(task, opts, seed, on_progress)
    results: dict[int, SolutionResult] = {}
    preps: dict[int, Prepared] = {}
    beside = [{"role": e[0], "name": e[1].name, **(e[3] if len(e) > 3 and e[3] else {})} for e in entries
              if timed_beside(e[0], e[1].name)] if opts.peers_beside and opts.time_it else []
    for i, entry in enumerate(entries):
        role, sol, path = entry[:3]
        options = entry[3] if len(entry) > 3 else None
        if role == "candidate" and beside:
            options = dict(options or {}) | {"beside": beside}
        prep = prepare(task, role, sol, path, seed, opts, options)
        if prep.job is None:
            results[i] = prep.res
        else:
            preps[i] = prep
    ex = executor or (executor_for(opts) if preps else None)
    if on_phase is not None and ex is not None:
        ex.on_phase = _phase_counter(on_phase, entries, preps)
    try:
        if ex is not None:
            report.executor = ex.describe()
            for i, prep in preps.items():
                ex.submit(i, prep.job, *prep.timeouts)
        for i, res in drain(ex, preps, task, cal, len(entries), results,
                            on_start=lambda i: on_progress and on_progress(entries[i][1].name, "start")):
            if entries[i][0] not in TRUSTED_ROLES:
                compare_with_peers(res, report.solutions, task)
            report.solutions.append(res)
            if on_progress:
                on_progress(res.name, res.status)
            if on_result:
                on_result(report)
    finally:
        if on_phase is not None and ex is not None:
            ex.on_phase = None
        if executor is None and ex is not None:
            ex.close()
        for prep in preps.values():
            if prep.logdir is not None:
                prep.logdir.cleanup()
    if opts.sanitize:
        # After every job: compute-sanitizer's runs are GPU work, and nothing may share a GPU with a
        # candidate being timed. Nothing is timed any more, so the candidates' runs go side by side
        # (each its own compute-sanitizer process on small shapes; one after another, five solutions'
        # three tools ran past 110 s on the H200).
        todo = [(res, sol) for res, (role, sol, *_) in zip(report.solutions, entries, strict=True)
                if role == "candidate" and res.status == "PASSED"]
        for _res, sol in todo:
            if on_progress:
                on_progress(f"{sol.name} under compute-sanitizer", "start")
        with ThreadPoolExecutor(max_workers=max(1, min(SANITIZE_PARALLEL, len(todo)))) as pool:
            futures = {pool.submit(_sanitize, res, task, sol, opts, seed): res for res, sol in todo}
            for fut in as_completed(futures):
                fut.result()
                res = futures[fut]
                if on_progress and res.status != "PASSED":
                    on_progress(res.name, res.status)
                if on_result:
                    on_result(report)
    if opts.lint:
        for res, (role, sol, path, *_) in zip(report.solutions, entries, strict=True):
            if role == "candidate" and sol.spec.language == "triton" and res.status != "COMPILE_ERROR":
                if on_progress:
                    on_progress(f"{sol.name}: static compile and pipeline lint", "start")
                _lint(res, task, sol, path)
                if on_result:
                    on_result(report)
    return report


def _phase_counter(on_phase: Callable, entries: list, preps: dict) -> Callable[[object, str, str | None], None]:
    """The executor's on_phase(key, gate, uuid) as on_phase(name, gate, uuid, step, steps)."""
    def confirming(job) -> bool:  # the confirmation's phases: its build, then one per timed workload
        return bool(job.time_it and job.device.startswith("cuda") and job.options.get("confirm", False))

    steps = {i: 1 + len(p.job.holdouts) + len(p.job.workload_uuids) * (2 if p.job.time_it else 1)
             + (1 + len(p.job.workload_uuids) if confirming(p.job) else 0)
             for i, p in preps.items()}
    seen: dict[object, int] = {}

    def phase(key: object, gate: str, uuid: str | None) -> None:
        seen[key] = seen.get(key, 0) + 1
        on_phase(entries[key][1].name, gate, uuid, min(seen[key], steps[key]), steps[key])

    return phase


def new_report(task: Task, opts: Options, seed: int,
               on_progress: Callable[[str, str], None] | None = None) -> tuple[EvalReport, Calibration | None]:
    """An empty report (environment, versions, calibration) and the calibration it names."""
    report = EvalReport(
        task=task.definition.name, task_dir=str(task.root), device=opts.device,
        environment=environment(opts.device), seed=seed,
        timestamp=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        harness_version=HARNESS_VERSION, timing_version=TIMING_VERSION, task_sources=task_sources(task.root),
        test_switches=["static gate off (KERNELCRAFT_TEST_NO_STATIC_GATE=1)"] if static_gate_off() else [],
    )
    if opts.time_it and not opts.device.startswith("cuda"):
        from kernelcraft.measure.cpu import NOTE

        report.timing_note = NOTE
    cal = None
    if opts.calibrate and opts.time_it:
        from kernelcraft.measure.calibrate import cached, calibrate_in_subprocess

        cal = cached(opts.device)  # read here: a child process only when it must be measured
        if cal is None:
            if on_progress:
                on_progress(f"calibration of {opts.device}", "start")
            cal = calibrate_in_subprocess(opts.device)
        if cal is not None:
            report.calibration = {"copy_gbs": cal.copy_gbs, "matmul_tflops": cal.matmul_tflops,
                                  "fingerprint": cal.fingerprint, "timestamp": cal.timestamp,
                                  "version": cal.version}
    return report, cal


def executor_for(opts: Options) -> Executor:
    ex = make_executor(opts.executor, opts.device, opts.devices, opts.workers, opts.overlap)
    ex.expect_more = opts.warm_spare
    return ex


def drain(ex: Executor | None, preps: dict, task: Task, cal: Calibration | None, n: int, done: dict[int, SolutionResult],
          on_start: Callable[[int], object] | None = None):
    """Yield (index, result) for indices 0..n-1 in order, reading ``ex``'s events until each of
    ``preps`` (index -> Prepared, submitted under its index) is done; ``done`` holds results that
    need no worker."""
    nxt = 0
    while nxt < n:
        if nxt in done:
            yield nxt, done.pop(nxt)
            nxt += 1
            continue
        ev = ex.next_event()
        if isinstance(ev, Started):
            preps[ev.key].started = time.monotonic()
            if on_start:
                on_start(ev.key)
            continue
        prep = preps.pop(ev.key)
        try:
            done[ev.key] = prep.finish(ev, task, cal)
        except Exception:  # noqa: BLE001 - one solution's broken outcome never costs the others theirs
            import traceback

            prep.res.status, prep.res.gate = "RUNTIME_ERROR", "build"
            prep.res.reason = ("harness error while recording this solution (not its verdict):\n"
                               + traceback.format_exc()[-2000:])
            done[ev.key] = prep.res


@dataclass
class Prepared:
    """A solution's record before its worker has run: the static gate's verdict, the skipped
    workloads, and the job to run (None when nothing needs running)."""

    res: SolutionResult
    by_uuid: dict[str, WorkloadResult]
    role: str
    job: Job | None = None
    timeouts: tuple[float, float] = (0.0, 0.0)  # build, workload phase
    logdir: tempfile.TemporaryDirectory | None = None
    started: float = 0.0

    def finish(self, done: Done, task: Task, cal: Calibration | None) -> SolutionResult:
        t0 = self.started or time.monotonic()
        _apply(self.res, self.by_uuid, done.outcome, task, cal, self.role)
        self.res.worker, self.res.attempts, self.res.retried = done.worker, done.attempts, list(done.retried)
        meta = done.outcome.meta
        if isinstance(meta.get("sandbox"), dict):
            self.res.sandbox = meta["sandbox"]
        if isinstance(meta.get("implementation"), dict):
            self.res.implementation = meta["implementation"]
        if meta.get("timing_process") in ("runner", "judge"):
            self.res.timing_process = meta["timing_process"]
            self.res.timing_process_reason = str(meta.get("timing_process_reason") or "")[:2000]
        if isinstance(meta.get("confirmation"), dict):
            _confirmation(self.res, meta["confirmation"], task)
        elif self.job is not None:
            _unconfirmed(self.res, self.job)
        if isinstance(meta.get("beside_unavailable"), dict):
            self.res.beside_unavailable = {str(k): str(v)[:600] for k, v in meta["beside_unavailable"].items()}
        if isinstance(meta.get("validation"), dict):
            _validation(self.res, meta["validation"])
        rc = meta.get("reference_cache")
        if isinstance(rc, dict) and all(isinstance(rc.get(k), int) and rc[k] >= 0 for k in ("hits", "stored", "rejected")):
            self.res.reference_cache = {k: rc[k] for k in ("hits", "stored", "rejected")}
        if isinstance(meta.get("baseline_unavailable"), str) and not self.res.baseline_unavailable:
            self.res.baseline_unavailable = _no_baseline(meta["baseline_unavailable"])
        self.res.phases_s = {k: round(v, 3) for k, v in done.outcome.phases_s.items()}
        self.res.phases_cpu_s = {k: round(v, 3) for k, v in done.outcome.phases_cpu_s.items()}
        self.res.worker_cpu_s = None if done.outcome.cpu_s is None else round(done.outcome.cpu_s, 3)
        self.res.wall_s = time.monotonic() - t0
        if self.logdir is not None:
            self.logdir.cleanup()
        return self.res


def prepare(task: Task, role: str, sol: Solution, path: str, seed: int, opts: Options,
            options: dict | None = None) -> Prepared:
    res = SolutionResult(
        name=sol.name, status="PASSED", role=role, author=sol.author, language=sol.spec.language,
        entry_point=sol.spec.entry_point, destination_passing_style=sol.spec.destination_passing_style,
        source_hash=sol.source_hash, path=path,
    )
    selected = task.workloads
    if opts.workloads:
        selected = [w for w in task.workloads if any(w.uuid.startswith(p) for p in opts.workloads)]
    skipped = {w.uuid: _skip_reason(task, w, opts) for w in selected}
    runnable = [w for w in selected if not skipped[w.uuid]]
    res.workloads = [WorkloadResult(uuid=w.uuid, axes=w.axes, status="SKIPPED", reason=skipped[w.uuid] or "not run")
                     for w in selected]
    by_uuid = {r.uuid: r for r in res.workloads}
    prep = Prepared(res, by_uuid, role)

    if role == "candidate" and not static_gate_off():
        verdict = check_static(sol, allowed_groups(task.contract))
        if not verdict.passed:
            _stop(res, "REJECTED", "static", verdict.reason, "not run: rejected by the static gate")
            return prep
    if not runnable:
        res.status, res.reason = "SKIPPED", "no workload can run on this device: " + "; ".join(
            sorted({r for r in skipped.values() if r}))
        return prep

    holdouts = []
    if role == "candidate":
        largest = max(task.io_bytes(w.axes) for w in runnable)
        cap = 4 * largest
        if not opts.device.startswith("cuda"):
            cap = min(cap, int(opts.cpu_max_mb * 1e6))
        first = runnable[0]
        # The first workload's shape again with fresh values: catches outputs cached by pointer,
        # shape or value (the timing phase's recheck does the same for every workload, when timed).
        repeat = first.model_copy(update={"uuid": f"repeat-{first.uuid[:8]}"})
        holdouts = [repeat, *holdout_workloads(task, seed, cap), *stress_workloads(task, runnable)]
        if opts.device.startswith("cuda"):
            # One shape past 2^31 elements where the constraints allow it (int32 offsets), within
            # half the device's memory: another worker's cached allocations may hold the rest.
            from kernelcraft.measure.environment import device_info

            big = large_holdout(task, device_info(opts.device)["memory_bytes"] // 2)
            holdouts += [big] if big is not None else []
    res.holdouts = [WorkloadResult(uuid=h.uuid, axes=h.axes, status="SKIPPED", reason="not run") for h in holdouts]
    by_uuid.update({r.uuid: r for r in res.holdouts})
    limits = task.contract.limits
    prep.logdir = tempfile.TemporaryDirectory(prefix="kc_log_")
    prep.job = Job(task_root=str(task.root), solution=sol.to_json_dict(), role=role, device=opts.device,
                   seed=seed, workload_uuids=[w.uuid for w in runnable],
                   log_path=str(Path(prep.logdir.name) / "worker.log"),
                   time_it=opts.time_it, timing=opts.timing or {},
                   holdouts=[h.model_dump(mode="json") for h in holdouts],
                   options=dict(options or {}) | ({"confirm": opts.confirm} if role == "candidate" else
                                                  {"trusted_timing": resolved_trusted_timing(opts)}))
    prep.timeouts = (opts.build_timeout_s or limits.build_timeout_s,
                     opts.workload_timeout_s or limits.workload_timeout_s)
    # The judge's own deadlines for its runner's replies sit inside the pool's for the judge's phases.
    prep.job.build_timeout_s, prep.job.workload_timeout_s = prep.timeouts[0] * 0.95, prep.timeouts[1] * 0.95
    return prep


SANITIZE_PARALLEL = 4  # compute-sanitizer processes at once (each on the smallest shapes of one candidate)


def _sanitize(res: SolutionResult, task: Task, sol: Solution, opts: Options, seed: int) -> None:
    from kernelcraft.gauntlet.sanitize import sanitize

    t0 = time.monotonic()
    ran = {w.uuid for w in res.workloads if w.status == "PASSED"}
    s = sanitize(task, sol, opts.device, seed, [w for w in task.workloads if w.uuid in ran], opts.sanitize)
    res.sanitize = s.to_dict()
    res.wall_s += time.monotonic() - t0
    if s.status != "PASSED":
        res.status, res.gate, res.reason, res.promotable = s.status, "sanitize", s.reason, False


def _stop(res: SolutionResult, status: str, gate: str, reason: str, workload_note: str) -> None:
    res.status, res.gate, res.reason = status, gate, reason
    for w in res.workloads + res.holdouts:
        if w.reason == "not run":
            w.reason = workload_note


def _speed_of_light(w: WorkloadResult, task: Task, cal: Calibration) -> str:
    """Set ``w.floor_ms`` and ``w.sol``; return an [impossible-speed] reason when it is beyond reach."""
    nbytes, flops, dtype = task.roofline(w.axes)
    w.floor_ms = cal.floor_ms(nbytes, flops, dtype)
    w.sol = w.floor_ms / w.latency_ms
    if w.sol <= task.contract.roofline.max_sol:
        return ""
    model = f"{nbytes / 1e6:.3f} MB at the calibrated {cal.copy_gbs:.0f} GB/s"
    if flops:
        model += f" and {flops / 1e9:.3f} GFLOP at {cal.matmul_tflops.get(dtype, 0):.0f} TFLOP/s ({dtype})"
    return (f"[impossible-speed] measured {w.latency_ms:.6f} ms, but {model} takes at least {w.floor_ms:.6f} ms "
            f"on this device ({w.sol:.2f}x its speed of light; the contract allows up to "
            f"{task.contract.roofline.max_sol:g}x): work escaped the timer or was skipped")


def _apply(res: SolutionResult, by_uuid: dict[str, WorkloadResult], out: JobOutcome, task: Task,
           cal: Calibration | None = None, role: str = "candidate") -> None:
    if out.build is not None and out.build[0] != "PASSED":
        status, reason = out.build
        _stop(res, status, "integrity" if status == "REJECTED" else "build", reason, f"not run: {'build failed' if status == 'COMPILE_ERROR' else reason}")
        return
    failed: tuple[str, str, str, str] | None = None  # (status, gate, uuid, reason)
    unplanned = [u for u in out.workloads if u not in by_uuid]
    if unplanned:
        _stop(res, "RUNTIME_ERROR", "build", f"harness error: a result for workload {unplanned[0][:60]!r}, "
              "which this evaluation never planned", "not run")
        return
    for uuid, gates in out.workloads.items():
        w = by_uuid[uuid]
        corr = gates.get("correctness", {}) or gates.get("generalization", {})
        timing = gates.get("timing", {})
        for fields in (corr, timing):
            if not fields:
                continue
            w.status, w.reason = fields["status"], fields.get("reason", "")
            for k in ("max_abs_error", "max_rel_error", "latency_ms", "baseline_latency_ms", "reference_latency_ms", "timing",
                      "request_judge_ratio", "beside_ms"):
                if fields.get(k) is not None:
                    setattr(w, k, fields[k])
            if fields.get("baseline_unavailable") and not res.baseline_unavailable:
                res.baseline_unavailable = _no_baseline(fields["baseline_unavailable"])
            skipped_holdout = fields["status"] == "SKIPPED" and uuid.startswith("holdout-")  # [reference-shape]
            if fields["status"] != "PASSED" and failed is None and not skipped_holdout:
                failed = (fields["status"], fields["gate"], uuid, fields.get("reason", ""))
        if w.latency_ms and w.status == "PASSED" and cal is not None:
            impossible = _speed_of_light(w, task, cal)
            if impossible and role == "candidate":
                w.status, w.reason = "REJECTED", impossible
                if failed is None:
                    failed = ("REJECTED", "timing", uuid, impossible)
        if w.latency_ms:
            if w.baseline_latency_ms:
                w.speedup_vs_baseline = w.baseline_latency_ms / w.latency_ms
            if w.reference_latency_ms:
                w.speedup_vs_reference = w.reference_latency_ms / w.latency_ms
    if out.died:
        gate, uuid = out.died_phase or ("start", None)
        if gate == "confirmation":  # the out-of-process confirmation of the timings: the timing gate
            gate, uuid = "timing", None
        if uuid and uuid in by_uuid:
            by_uuid[uuid].status = out.died_status
            by_uuid[uuid].reason = out.died
        if out.died_status == "REJECTED":
            gate = "integrity"
        failed = failed or (out.died_status, gate if gate != "start" else "build", uuid or "", out.died)
    if failed is not None:
        status, gate, uuid, reason = failed
        where = ""
        if uuid:
            axes = ", ".join(f"{k}={v}" for k, v in by_uuid[uuid].axes.items())
            where = f"workload {uuid} ({axes}): "
            if uuid.startswith("repeat-"):
                where = "[output-caching] fresh values of a shape already seen, " + where
            elif uuid.startswith("holdout-"):
                where = "[holdout-shapes] a shape none of the workloads has, " + where
            elif uuid.startswith("stress-"):
                where = ("[stress-inputs] a workload's shape with outliers (|x| ~ 100-1000) and near-zero rows "
                         "in its floating inputs, " + where)
        _stop(res, status, gate, where + reason, "not run: the candidate failed an earlier workload")
        return
    ran = [w for w in res.workloads if w.status == "PASSED"]
    weights = [task.contract.weight(w.uuid) for w in ran]
    res.speedup_vs_baseline = weighted_geomean([w.speedup_vs_baseline for w in ran], weights)
    res.speedup_vs_reference = weighted_geomean([w.speedup_vs_reference for w in ran], weights)
    skipped = [w for w in res.workloads if w.status == "SKIPPED"]
    unchecked = [h for h in res.holdouts if h.status != "PASSED" and not (h.status == "SKIPPED" and h.reason != "not run")]
    if unchecked:  # the worker ended without judging them: not a pass
        _stop(res, "RUNTIME_ERROR", "generalization", f"holdout {unchecked[0].uuid} was not evaluated",
              "not run")
        return
    if skipped:
        res.reason = f"{len(ran)} of {len(res.workloads)} workloads evaluated; {len(skipped)} skipped"
    res.promotable = (  # only a candidate: the trusted rows are what it is compared with
        role == "candidate" and not skipped and res.speedup_vs_baseline is not None
        and res.speedup_vs_baseline >= task.contract.promotion.min_speedup_vs_baseline
    )


def _no_baseline(why: str) -> str:
    return (f"{why[:1500]}. No baseline ran: speedup_vs_baseline is None; this candidate's speedups are relative "
            "to the reference (speedup_vs_reference) and to the peers and torch.compile rows of the run "
            "(speedup_vs_best_peer)")


def _validation(res: SolutionResult, v: dict) -> None:
    """The request's own verifier (``[validate]``, :mod:`kernelcraft.gauntlet.validate`): it can only
    reject; its command, exit code and output's tail are kept either way."""
    keep = ("status", "reason", "command", "exit_code", "output_tail", "attempts")
    res.validation = {k: v[k] for k in keep if k in v}
    status = v.get("status")
    if status not in ("PASSED", "SKIPPED") and res.status == "PASSED":
        res.status, res.gate, res.reason, res.promotable = str(status), "validation", str(v.get("reason", "")), False
        for w in res.workloads:
            if w.status == "PASSED" and w.latency_ms is None:
                w.reason = "checked; not timed: the request's own verifier rejected the candidate"


def _lint(res: SolutionResult, task: Task, sol: Solution, path: str) -> None:
    """The candidate's Triton kernels compiled for sm_90 at the workload moving the most bytes, in a process of its
    own (the candidate's module is imported there, never here), and their TTGIR read for the pipelined-loop race
    (knowledge/triton-short-pipelined-dot-loop-race.md). What comes back is data from a process that ran candidate
    code: only well-formed fields are kept, and it can only take a promotion away, never give one."""
    from kernelcraft.measure.triton_static import race_lines, static_report

    w = max(task.workloads, key=lambda w: task.io_bytes(w.axes))
    raw = static_report(task, sol, Path(path), w, 300.0, lint_only=True)
    launches = raw.get("launches") if isinstance(raw.get("launches"), list) else []
    kernels = {r["kernel"][:200] for r in launches if isinstance(r, dict) and isinstance(r.get("kernel"), str)}
    races = race_lines(raw)
    res.static_lint = {"workload": w.uuid, "triton": str(raw.get("triton", ""))[:40], "target": "sm_90",
                       "input_device": str(raw.get("input_device", ""))[:8], "kernels": sorted(kernels), "races": races}
    if not launches:
        res.static_lint["error"] = str(raw.get("error") or "no kernel was compiled")[:500]
    if races and res.promotable:
        res.promotable = False
        res.reason = (res.reason + "; " if res.reason else "") + (
            "not promotable: pipeline race (a shared buffer refilled while an async wgmma may still read it) in "
            + "; ".join(races) + ": run that loop with tl.range(..., num_stages=1)")


def _unconfirmed(res: SolutionResult, job: Job) -> None:
    """A GPU candidate timed with no out-of-process confirmation (``--no-confirm``) promotes nothing: a timing
    nobody checked from outside the candidate's process (session 23's gdn_prefill record said promotable
    without one)."""
    if res.role == "candidate" and job.time_it and job.device.startswith("cuda") and res.promotable:
        res.promotable = False
        res.reason = (res.reason + "; " if res.reason else "") + (
            "not promotable: the timing was not confirmed out of process (evaluated without --confirm)")


def _confirmation(res: SolutionResult, c: dict, task: Task) -> None:
    """The out-of-process timing confirmation (:mod:`kernelcraft.gauntlet.confirm`): a mismatch is the
    solution's verdict; no confirmation on a GPU means no promotion."""
    res.confirmation = {k: c[k] for k in ("confirmed", "reason", "per_workload", "margin", "ncu_tail") if k in c}
    if c.get("status") == "REJECTED" and res.status == "PASSED":
        res.status, res.gate, res.reason, res.promotable = "REJECTED", "timing", str(c.get("reason", "")), False
        i = c.get("workload")
        timed = [w for w in res.workloads if w.latency_ms]
        if isinstance(i, int) and 0 <= i < len(timed):
            timed[i].status, timed[i].reason = "REJECTED", res.reason
    elif not c.get("confirmed") and res.promotable:
        res.promotable = False
        res.reason = (res.reason + "; " if res.reason else "") + (
            "not promotable: the timing was not confirmed out of process (" + str(c.get("reason", ""))[:300] + ")")


def compare_with_peers(res: SolutionResult, earlier: list[SolutionResult], task: Task) -> None:
    """Per workload the fastest trusted row measured in this run (the baseline, torch.compile, every
    peer that ran: what a user could run instead) and the candidate's speedup over it; per solution
    their weighted geometric mean. With the contract's ``min_speedup_vs_best_peer``, promotion also
    needs that (and a peer measured at every timed workload)."""
    trusted = [r for r in earlier if r.role in TRUSTED_ROLES]
    best: dict[str, tuple[str, float]] = {}
    passed: dict[str, set[str]] = {}  # workload -> trusted rows that PASSED there (their outputs were checked)
    for r in trusted:
        for w in r.workloads:
            if w.status == "PASSED" and w.latency_ms:
                passed.setdefault(w.uuid, set()).add(r.name)
                if w.uuid not in best or w.latency_ms < best[w.uuid][1]:
                    best[w.uuid] = (r.name, w.latency_ms)
    speedups, weights = [], []
    beside_rows = {r.name for r in trusted if timed_beside(r.role, r.name)}
    res.timing_asymmetry_ms = asymmetry_ms(res.workloads, trusted) if res.role == "candidate" else None
    for w in res.workloads:
        # Rows timed beside this candidate (--peers-beside: its rotation, the same kind of memory) decide
        # where there are any, the baseline beside it among them; only rows that PASSED there on their own.
        near = {n: ms for n, ms in (w.beside_ms or {}).items() if ms and n in passed.get(w.uuid, ())}
        if set(near) != {n for n in beside_rows if n in passed.get(w.uuid, ())}:
            near = {}  # a row that passed here was not timed beside: all of them alone, or the fastest may be missing
        if near and w.baseline_latency_ms and "baseline" in passed.get(w.uuid, ()):
            near["baseline"] = w.baseline_latency_ms
        pick = min(near.items(), key=lambda kv: kv[1]) if near else best.get(w.uuid)
        if pick and w.latency_ms and w.status == "PASSED":
            w.best_peer, w.best_peer_latency_ms = pick
            w.best_peer_beside = bool(near)
            w.speedup_vs_best_peer = w.best_peer_latency_ms / w.latency_ms
            speedups.append(w.speedup_vs_best_peer)
            weights.append(task.contract.weight(w.uuid))
            if near:  # the candidate's own spread, and the placement noise against the row picked beside it
                method = (w.timing or {}).get("method", "")
                w.unsettled = unsettled(res.name, w.timing, w.latency_ms,
                                        [(pick[0], {"median_ms": pick[1], "method": method})])
            else:
                w.unsettled = unsettled_at(res.name, w, trusted, res.timing_asymmetry_ms)
    res.unsettled_workloads = sum(bool(w.unsettled) for w in res.workloads)
    res.speedup_vs_best_peer = weighted_geomean(speedups, weights)
    res.best_peers = sorted({w.best_peer for w in res.workloads if w.best_peer})
    res.peers_unavailable = [r.reason if r.reason.startswith(r.name) else f"{r.name}: {r.reason}"
                             for r in trusted if r.status == "SKIPPED" and r.role == "peer"]
    need = task.contract.promotion.min_speedup_vs_best_peer
    if need is not None and res.promotable:
        timed = [w for w in res.workloads if w.latency_ms]
        if any(w.best_peer is None for w in timed):
            res.promotable = False
            res.reason = (res.reason + "; " if res.reason else "") + (
                "not promotable: the contract asks to beat the best peer, and no peer was measured at "
                f"{sum(w.best_peer is None for w in timed)} timed workload(s)")
        elif res.unsettled_workloads:
            res.promotable = False
            res.reason = (res.reason + "; " if res.reason else "") + (
                f"not promotable: the contract asks to beat the best peer, and at {res.unsettled_workloads} "
                "workload(s) the timing cannot rank them (bimodal samples, p75/p25 > "
                f"{SPREAD_MAX}, a gap under the placement noise of {PLACEMENT_MS * 1e3:.1f} us, or one inside the "
                "run's measured asymmetry: measure/stability.py), so "
                "the comparison decides nothing there")
        elif res.speedup_vs_best_peer is None or res.speedup_vs_best_peer < need:
            res.promotable = False
            res.reason = (res.reason + "; " if res.reason else "") + (
                f"not promotable: {res.speedup_vs_best_peer or 0:.3f}x the best peer, the contract asks {need:g}x")
