"""The worker process is the *judge* of one job: it makes the inputs, holds the seed, runs the
reference and every check, and sends the outcome to the recording process. It never imports candidate
code: a candidate is built and called in a *runner* (:mod:`kernelcraft.runner`) it forked before it
read its job, sandboxed, reached over a socket, frozen between requests
(:mod:`kernelcraft.gauntlet.judge`). Trusted rows (the baseline, torch.compile, peers) run here.

It speaks to the parent over a pipe, announcing each phase before it starts, so that when the
process hangs or dies the parent knows exactly where. Messages are JSON arrays, never pickles: this
process runs candidate code, which could write to the pipe, and unpickling is running code, so
nothing it sends may be more than data to the process that records results (:func:`send`).

- ``("warm",)`` (a spare) its imports are done; it waits for a job;
- ``("phase", gate, uuid | None, cpu_s)`` about to start a gate (for a workload); ``cpu_s``: this
  process's CPU seconds so far, its reaped children (nvcc, ptxas) included: a diagnostic only;
- ``("build", status, reason)`` the build's outcome (``PASSED``, ``COMPILE_ERROR`` or ``SKIPPED``);
- ``("ready",)`` (jobs with ``gpu_slot``) built, about to check a workload; waiting for the parent's
  ``("go",)``, which comes once this process holds its device's GPU slot (shared: other candidates'
  checks may run beside);
- ``("idle",)`` (jobs with ``gpu_slot``) that workload's check is done and this process's GPU work
  has finished: the shared hold is given up until the next ``("ready",)``; also in the middle of a
  check while Triton compiles a kernel (CPU work), followed by ``("ready",)`` before its launch;
- ``("ready", "timing")`` (jobs with ``gpu_slot``) checked, its GPU work finished; waiting for the
  ``("go",)`` that says it now holds the slot alone, for its timings;
- ``("workload", gate, uuid, fields)`` one workload's outcome for that gate;
- ``("fatal", text)`` a harness error (not the candidate's verdict);
- ``("done", cpu_s)`` finished.

Module-level imports stay minimal: the Triton interpreter must be switched on before triton is
imported anywhere in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Job:
    task_root: str
    solution: dict  # Solution JSON
    role: str  # "candidate", "baseline" or "torch.compile"
    device: str
    seed: int
    workload_uuids: list[str]
    log_path: str
    time_it: bool = True
    timing: dict = field(default_factory=dict)  # overrides of the contract's [timing]
    holdouts: list[dict] = field(default_factory=list)  # Workload dicts of the generalization gate
    # Build first, then wait for the parent's "go" before any GPU work: another process may be timing
    # on this GPU meanwhile (compilation overlapped with timing, one GPU slot per device).
    gpu_slot: bool = False
    build_timeout_s: float = 900.0  # how long the judge waits for its runner's build reply
    workload_timeout_s: float = 300.0  # ... and for any other reply
    options: dict = field(default_factory=dict)  # per role: {"peer": name}, {"compile_mode": ...}


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children it has waited for (compilers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _plain(x: object) -> object:
    """JSON's fallback for numbers that are not Python floats (a numpy or torch scalar)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return repr(x)


def send(conn, *msg: object) -> None:
    """One message to the parent, as JSON bytes (the parent decodes data, never pickles)."""
    conn.send_bytes(json.dumps(msg, default=_plain).encode())


def _only_gpu(visible: str | None) -> None:
    """Show this process one GPU (before torch is imported): a candidate cannot reach another GPU,
    where a different candidate may be timed."""
    if visible is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible


def warm_imports() -> None:
    """Import what every job needs: torch, the gauntlet, torch._dynamo (entered once, see
    :func:`kernelcraft.runner.checks.prime_dispatch_modes`) and triton, with the hash of
    Triton's own sources that keys its cache. On the H200 host that is ~14 CPU-s and ~10 s of wall
    time per process (torch 7.6 CPU-s, torch._dynamo 4.3, triton_key 0.9: scripts/worker_profile.py).
    Failures are left to the job, which imports the same things again and reports there."""
    try:
        import kernelcraft.gauntlet.judge  # noqa: F401  (imports torch)
        import kernelcraft.runner.main  # noqa: F401
        import kernelcraft.solution.build  # noqa: F401
        import kernelcraft.task.loader  # noqa: F401
        from kernelcraft.runner.checks import prime_dispatch_modes

        prime_dispatch_modes()
        try:
            from triton.runtime.cache import triton_key

            triton_key()  # cached for the process (and for every process forked from it)
        except Exception:  # noqa: BLE001, S110 - the job reports a triton that cannot start
            pass
    except BaseException:  # noqa: BLE001, S110 - the same imports run again in the job and report there
        pass


def warm_main(conn, device: str, visible: str | None = None, env: dict[str, str] | None = None) -> None:
    """A spare worker: started ahead of need, it imports what every job needs (torch, triton, the
    gauntlet) while the previous candidate runs, then waits for one job. Each candidate still gets a
    process of its own; only the start-up cost is taken off its turnaround. Forked from a template
    that has imported all of that already (:mod:`kernelcraft.worker.template`), the imports below
    find everything loaded. ``env``: the parent's environment when it asked for this process (a
    forked process would otherwise have the template's)."""
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    _only_gpu(visible)
    if not device.startswith("cuda"):
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported anywhere in this process
    warm_imports()
    # The runner is forked now, before the job (its seed, its contract) is in this process's memory.
    from kernelcraft.runner.client import RunnerClient

    runner = RunnerClient(device)
    try:
        send(conn, "warm")
        job = conn.recv()
    except (EOFError, OSError):
        runner.close()
        return  # no job came: the parent is gone or shut the spare down
    worker_main(conn, job, runner)


def worker_main(conn, job: Job, runner=None) -> None:
    log = open(job.log_path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    if not job.device.startswith("cuda"):
        os.environ["TRITON_INTERPRET"] = "1"
    from kernelcraft.gauntlet import refcache

    refcache.stats.update(dict.fromkeys(refcache.stats, 0))  # this job's, in a worker that may have run others
    try:
        _run(conn, job, runner)
    except BaseException:  # noqa: BLE001 - a harness bug must still reach the parent as text
        send(conn, "fatal", traceback.format_exc()[-4000:])
    finally:
        if runner is not None:
            runner.close()
        if any(refcache.stats.values()):  # the record says where its expected outputs came from
            send(conn, "meta", {"reference_cache": dict(refcache.stats)})
        send(conn, "done", cpu_seconds())
        conn.close()


class _Slot:
    """This job's hold on its device's GPU slot (jobs with ``gpu_slot``; without, every call is a
    no-op that succeeds). A check holds it shared for one workload at a time, so a timing waiting
    for it waits only for the workload checks in flight, not for other candidates' whole check
    phases; the hold is given up only once this process's GPU work has finished."""

    def __init__(self, conn, gated: bool, on_gpu: bool):
        self.conn, self.gated, self.on_gpu, self.held = conn, gated, on_gpu, False

    def _sync(self) -> None:
        if self.on_gpu:
            import torch

            torch.cuda.synchronize()  # every stream of this process on its device

    def _capturing(self) -> bool:
        """A CUDA graph is being captured on this thread's stream (the candidate's own): no
        synchronize may run until it ends, so the hold is kept through such a compile."""
        if not self.on_gpu:
            return False
        import torch

        return torch.cuda.is_current_stream_capturing()

    def share(self) -> bool:
        if not self.gated or self.held:
            return True
        send(self.conn, "ready")
        self.held = self.conn.recv() == ("go",)
        return self.held

    def leave(self) -> None:
        if self.gated and self.held:
            self._sync()
            send(self.conn, "idle")
            self.held = False

    def alone(self) -> bool:
        if not self.gated:
            return True
        self._sync()
        send(self.conn, "ready", "timing")
        return self.conn.recv() == ("go",)

    @contextlib.contextmanager
    def compiling(self):
        """A kernel compiled in the middle of a check (Triton compiles at a kernel's first launch
        with new specializations): CPU work, so the shared hold is given up for it, once this
        process's GPU work has finished, and taken again before the launch. A compile holding the
        slot kept every timing of the lane waiting: on the H200 one large tile of the silu_mul
        tuner's space compiled for ~14 CPU-s inside one check
        (results/h200x2/history/scale_80_given_bd98a4b.json, job 76).
        Outside a shared hold (the build, the timings) it changes nothing."""
        if not (self.gated and self.held) or self._capturing():
            yield
            return
        self.leave()
        try:
            yield
        finally:
            try:
                again = self.share()
            except (EOFError, OSError):
                again = False
            if not again:
                os._exit(1)  # the parent ended this job: no GPU work may run without its hold


def _take_device(device: str) -> None:
    import torch

    torch.cuda.set_device(torch.device(device).index or 0)


def _import_file(path: Path, module_name: str):
    """Import a file as ``module_name``, registered in ``sys.modules``: Dynamo looks a function's
    module up by name when it inlines it (a reference's helper), and an unregistered module failed
    every torch.compile row whose reference has one (gdn_decode's ``_l2norm`` on the H200,
    2026-12-01: "InternalTorchDynamoError: ModuleNotFoundError: No module named 'kc_reference'")."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


# Import names whose pip distribution is named otherwise (the libraries KDA requests' baselines import).
_DISTRIBUTIONS = {"flashinfer": "flashinfer-python", "cutlass": "nvidia-cutlass-dsl", "fla": "flash-linear-attention",
                  "flash_attn": "flash-attn", "cuda": "cuda-python", "cupy": "cupy-cuda12x"}


def _load_baseline(path: Path):
    """The task's baseline, or why it cannot run here (a library this machine lacks: a KDA request's
    baseline may import flashinfer or tilelang for a B200). Trusted code, imported only by the judge."""
    try:
        return _import_file(path, "kc_baseline").run, ""
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        dist = _DISTRIBUTIONS.get(top, top)
        return None, (f"baseline.py imports {e.name!r}, which this machine lacks ({e}); "
                      f"install it (pip install {dist}) or run where it exists")
    except BaseException as e:  # noqa: BLE001 - any failure of the task's own code is named, not a crash
        from kernelcraft.solution._traceback import candidate_traceback

        return None, f"baseline.py could not be imported: {candidate_traceback(e)}"


CANNOT_COMPILE = "torch.compile cannot compile the reference: "


def _compile_guarded(compiled):
    """The compiled reference, noting why Dynamo or its backend failed (``cannot_compile``) so the
    row is SKIPPED with that reason, not RUNTIME_ERROR: the eager reference ran on the same inputs
    just before, so the failure is torch.compile's, not the task's (:func:`_compile_verdict`)."""
    import torch._dynamo.exc

    def run(*args):
        try:
            return compiled(*args)
        except torch._dynamo.exc.TorchDynamoException as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            run.cannot_compile.append(f"{type(e).__name__}: {lines[0] if lines else ''}"[:500])
            raise

    run.cannot_compile = []
    return run


def _as_declared(reference, dtypes: list):
    """The reference with its floating outputs cast to the definition's dtypes, for the
    torch.compile row (compiled with the cast, so Inductor fuses it): a reference may compute in
    float32 and return that (float64 when the judge upcasts its inputs), while the row is judged as a
    solution, whose outputs must have the declared dtypes; gdn_decode's row failed INCORRECT_DTYPE
    (float32 where bfloat16 is declared) once it compiled. A no-op where the dtypes already agree."""
    import torch

    def cast(o, dtype):
        if isinstance(o, torch.Tensor) and o.is_floating_point() and dtype.is_floating_point and o.dtype != dtype:
            return o.to(dtype)
        return o

    def as_declared(*args):
        out = reference(*args)
        if isinstance(out, (tuple, list)):
            res = [cast(o, dtypes[i]) if i < len(dtypes) else o for i, o in enumerate(out)]
            return tuple(res) if isinstance(out, tuple) else res
        return cast(out, dtypes[0]) if dtypes else out

    return as_declared


def _compile_verdict(fn, result: dict) -> dict:
    """A failed torch.compile row's workload result as SKIPPED with the compiler's reason."""
    why = getattr(fn, "cannot_compile", None)
    if why and result.get("status") not in ("PASSED", "SKIPPED"):
        return {"status": "SKIPPED", "gate": "build", "reason": CANNOT_COMPILE + why[-1]}
    return result


def compiled_reference(reference, dtypes: list, options: dict) -> tuple:
    """(function, what the record says of it): the reference under torch.compile as its trusted row runs
    it, in the judge or in a runner of its own (``trusted_fn``)."""
    import torch
    import torch._dynamo

    # One graph per shape (dynamic=False): every workload compiled for its own sizes, as a user
    # tuning for a shape would; recompiles happen in the checks and warm-up, never in timing.
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 256)
    if hasattr(torch._dynamo.config, "recompile_limit"):
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 256)
    mode = options.get("compile_mode") or None
    dynamic = bool(options.get("compile_dynamic", False))
    info = {"library": "torch", "version": torch.__version__, "mode": mode or "default", "dynamic": dynamic}
    return _compile_guarded(torch.compile(_as_declared(reference, dtypes), dynamic=dynamic, mode=mode)), info


def _trusted_fn(job: Job, task, reference, baseline) -> tuple:
    """(function, prepare or None, what the record says of it) of a trusted row: the baseline, the
    reference under torch.compile, or a peer."""
    if job.role == "baseline":
        return baseline, None, {}
    if job.role == "torch.compile":
        module = sys.modules.get(getattr(reference, "__module__", "") or "")
        declared = getattr(module, "TORCH_COMPILE_SKIP", None)
        if declared:  # the task says why compiling its reference cannot finish (no attempt is made)
            raise LookupError(f"{CANNOT_COMPILE}{declared}")
        from kernelcraft.task.dtypes import torch_dtype

        dtypes = [torch_dtype(spec.dtype) for spec in task.definition.outputs.values()]
        fn, info = compiled_reference(reference, dtypes, job.options)
        return fn, None, info
    if job.role == "peer":
        from kernelcraft.task.peers import load_peer

        peer = load_peer(task.root, job.options["peer"], job.device)
        return peer.run, peer.prepare, peer.info
    raise ValueError(f"no trusted function for role {job.role!r}")


def trusted_fn(role: str, options: dict, device: str, *, folder: Path, entry: str,
               output_dtypes: list[str]) -> tuple:
    """(function, prepare or None) of a trusted row loaded from its sources written to ``folder`` (a
    runner's scratch: ``entry`` the baseline's or reference's file, a peer's under ``folder/peers``), as
    :func:`_trusted_fn` loads it in the judge from the task folder."""
    if role == "baseline":
        return _import_file(folder / entry, "kc_baseline").run, None
    if role == "torch.compile":
        from kernelcraft.task.dtypes import torch_dtype

        reference = _import_file(folder / entry, "kc_reference").run
        fn, _ = compiled_reference(reference, [torch_dtype(d) for d in output_dtypes], options)
        return fn, None
    if role == "peer":
        from kernelcraft.task.peers import load_peer

        peer = load_peer(folder, options["peer"], device)
        return peer.run, peer.prepare
    raise ValueError(f"no trusted function for role {role!r}")


def trusted_timing_subject(runner, job: Job, task, judge) -> tuple:
    """(subject, why not): a trusted row's timing subject in the runner this job was forked with, loaded
    with the row's own code (the runner's ``trusted`` request), so that the row's timed calls take the
    same path as a candidate's: fresh inputs written by the judge into a shared arena, a sync, a hop to
    another process, its timer (``--trusted-timing runner``; session 23's A/A on the H200: the same code
    read +0.26-0.32 us slower as a candidate than as the judge's own row, and two runner copies agreed
    within 0.06 us). None and the reason when the runner cannot load it: the judge then times the row
    itself, as before, and the record says so."""
    from kernelcraft.gauntlet.judge import Refused, RemoteSubject
    from kernelcraft.runner import protocol

    d = task.definition
    try:
        runner.wait_ready(job.build_timeout_s)
        sub = RemoteSubject(runner, judge, False, job.workload_timeout_s)
        r = sub._ask("trusted", protocol.BuildReply, timeout=job.build_timeout_s, role=job.role,
                     solution=job.solution, options={k: v for k, v in job.options.items() if k != "beside"},
                     inputs=list(d.inputs), outputs=list(d.outputs),
                     output_dtypes=[spec.dtype for spec in d.outputs.values()])
    except Refused as e:
        return None, f"{e.status}: {e.reason}"[:2000]
    if r.status != "PASSED":
        return None, (r.reason or r.status)[:2000]
    return sub, ""


def _beside_fns(job: Job, task, reference, baseline) -> tuple[dict, dict[str, str]]:
    """The trusted rows a candidate is timed beside (``job.options["beside"]``: each a trusted job's role and
    options plus its row ``name``), loaded here as their own jobs load them: name -> (function, prepare),
    and name -> why one could not be loaded."""
    import dataclasses

    fns, gone = {}, {}
    for spec in job.options["beside"]:
        name = str(spec.get("name", ""))
        try:
            fn, prepare, _info = _trusted_fn(dataclasses.replace(job, role=spec["role"], options=dict(spec)), task,
                                             reference, baseline)
        except BaseException as e:  # noqa: BLE001 - a row that cannot load here is left out, saying why
            gone[name] = f"{type(e).__name__}: {str(e)[:300]}"
            continue
        fns[name] = (fn, prepare)
    return fns, gone


def _run(conn, job: Job, runner) -> None:
    import torch

    from kernelcraft.gauntlet.judge import Judge, LocalSubject, Refused, RemoteSubject
    from kernelcraft.solution.model import Solution
    from kernelcraft.task.loader import load_task
    from kernelcraft.task.workload import Workload

    torch.set_grad_enabled(False)
    task = load_task(job.task_root)
    definition = task.definition
    workdir = Path(tempfile.mkdtemp(prefix="kc_judge_"))
    on_gpu = job.device.startswith("cuda")
    if on_gpu and not job.gpu_slot:
        _take_device(job.device)
    if not on_gpu:
        from kernelcraft.measure.cpu import threads

        torch.set_num_threads(threads())  # the trusted rows' intra-op threads, as the candidate's runner has
    ref_file = workdir / "kc_reference.py"
    ref_file.write_text(definition.reference)
    reference = _import_file(ref_file, "kc_reference").run
    baseline, baseline_missing = _load_baseline(task.baseline_path)
    solution = Solution.model_validate(job.solution)
    slot = _Slot(conn, job.gpu_slot, on_gpu)
    trusted = None  # a trusted row's function (its torch.compile failures become SKIPPED)
    send(conn, "phase", "build", None, cpu_seconds())
    if job.role == "baseline" and baseline is None:
        send(conn, "build", "SKIPPED", "[baseline-unavailable] " + baseline_missing)
        return
    if job.role == "candidate" and baseline is None:
        send(conn, "meta", {"baseline_unavailable": baseline_missing})  # said in the record, timed or not
    if job.role == "candidate":
        if solution.spec.language == "triton":
            # Import triton here, as the harness: if it cannot start (a missing numpy for the CPU
            # interpreter, a broken install), that is this machine's problem, not the candidate's.
            try:
                import triton  # noqa: F401
            except Exception as e:  # noqa: BLE001
                send(conn, "build", "SKIPPED", f"triton cannot be imported on this machine: {type(e).__name__}: {e}")
                return
        if runner is None:
            raise RuntimeError("a candidate job needs a runner; none was forked")
        try:
            runner.wait_ready(job.build_timeout_s)
            send(conn, "meta", {"sandbox": runner.sandbox})
            # A Python or Triton candidate's import is quick and could launch GPU work: it runs inside a
            # shared hold. A CUDA build (nvcc, minutes) runs outside, as before (docs/integrity.md).
            quick = solution.spec.language in ("python", "triton")
            if quick and not slot.share():
                return
            subject = RemoteSubject(runner, None, solution.spec.destination_passing_style, job.workload_timeout_s)
            built = subject._ask("build", _build_reply(), timeout=job.build_timeout_s,
                                 solution=job.solution, inputs=list(definition.inputs),
                                 outputs=list(definition.outputs))
        except Refused as e:
            send(conn, "build", e.status if e.status != "TIMEOUT" else "TIMEOUT", e.reason)
            return
        if built.status != "PASSED":
            send(conn, "build", built.status, built.reason)
            return
    else:
        # --trusted-timing runner: this row's timed calls go through the runner it was forked with, loaded
        # with the row's own code (never a candidate's), as a candidate's do; its checks stay here
        if runner is not None and not (job.time_it and job.options.get("trusted_timing") == "runner"):
            runner.close()
            runner = None
        # A peer's library may touch the GPU as it loads (quack's CuTe DSL, FlashInfer's modules, a CUDA
        # context): inside a shared hold, as a candidate's quick import, never beside another job's timing.
        # Session 23's H200 records had the rows timed first (baseline, torch.compile) bimodal at decode sizes
        # (rmsnorm's torch.compile: median 32 us, p25 24, minimum 4.7) while the other rows' loads ran unheld.
        if not slot.share():
            return
        if on_gpu and job.gpu_slot:
            _take_device(job.device)
        try:
            fn, prepare, info = _trusted_fn(job, task, reference, baseline)
            trusted = fn
        except LookupError as e:  # a peer whose library or device is missing here: SKIPPED, saying why
            send(conn, "build", "SKIPPED", str(e))
            return
        except BaseException as e:  # noqa: BLE001 - a peer that cannot load here is SKIPPED, with why
            from kernelcraft.solution._traceback import candidate_traceback

            send(conn, "build", "SKIPPED", f"could not be loaded: {candidate_traceback(e)}")
            return
        if info:
            send(conn, "meta", {"implementation": info})
        subject = None
    send(conn, "build", "PASSED", "")
    if not slot.share():
        return
    if on_gpu and job.gpu_slot:
        _take_device(job.device)
    judge = Judge(task, None, reference, baseline, job.device, job.seed, job.role, solution.spec.language)
    if subject is None:
        subject = LocalSubject(fn, judge, dps=False, prepare=prepare)
    else:
        subject.judge = judge
        subject.release = job.gpu_slot and on_gpu

        def on_event(event: str) -> None:
            if event == "compiling":
                slot.leave()
            elif not slot.share():
                os._exit(1)  # the parent ended this job: no GPU work may run without its hold

        subject.on_event = on_event
    judge.subject = subject
    if job.role == "candidate" and job.time_it and job.options.get("beside"):
        judge.beside, gone = _beside_fns(job, task, reference, baseline)
        judge.beside_failed.update(gone)
    current: tuple[str, str] = ("build", "")
    try:
        workloads = [task.workload(u) for u in job.workload_uuids]
        failed: set[str] = set()
        for w in workloads:
            if not slot.share():
                return
            current = ("correctness", w.uuid)
            send(conn, "phase", "correctness", w.uuid, cpu_seconds())
            result = _compile_verdict(trusted, judge.check(w))
            slot.leave()
            send(conn, "workload", "correctness", w.uuid, result)
            if result["status"] != "PASSED":
                if job.role == "candidate":
                    return
                # a trusted row wrong (or unable to run) at one shape is still checked and timed at the others,
                # where a user would run it: quack's cross_entropy returns NaN at vocabulary 151936 (by our reading
                # of quack 0.6.5's tiling its 16th cluster CTA gets no column there; not checked on a GPU) and so
                # was never timed at 256000 or 4096 x 128256 (sessions 19-23)
                failed.add(w.uuid)
        workloads = [w for w in workloads if w.uuid not in failed]
        if not workloads:
            return
        for h in map(Workload.model_validate, job.holdouts):
            if not slot.share():
                return
            current = ("generalization", h.uuid)
            send(conn, "phase", "generalization", h.uuid, cpu_seconds())
            result = judge.check(h, salt=0x401D)
            slot.leave()
            if result.pop("reference_shape", False):
                # a shape the task cannot produce (its definition allows more than its reference does):
                # no holdout at all, rather than a verdict against the candidate
                result = {"status": "SKIPPED", "gate": "generalization", "reason": result["reason"]}
            if result["gate"] == "correctness":
                result["gate"] = "generalization"
            send(conn, "workload", "generalization", h.uuid, result)
            if result["status"] not in ("PASSED", "SKIPPED"):
                return
        if isinstance(subject, RemoteSubject) and task.contract.validate_ is not None:
            current = ("validation", "")
            send(conn, "phase", "validation", None, cpu_seconds())
            if not slot.share():
                return
            checked = _validate(subject, task, solution)
            slot.leave()
            send(conn, "meta", {"validation": checked})
            if checked["status"] not in ("PASSED", "SKIPPED"):
                return
        if not job.time_it:
            return
        if not slot.alone():
            return
        if isinstance(subject, RemoteSubject):
            subject.release = False  # alone on the GPU until the end: nothing to give up for a compile
        confirm = isinstance(subject, RemoteSubject) and on_gpu and job.options.get("confirm", False)
        timed = []  # (workload, reported latency) of each timing that PASSED, for the confirmation
        try:  # one arena for every timing and its recheck, where their sizes allow (a hint only)
            sizes = [judge.arena_bytes(w) for w in workloads]
        except Exception:  # noqa: BLE001 - place() sizes each arena itself
            sizes = []
        if job.role == "candidate":
            send(conn, "meta", {"timing_process": "runner"})
        elif runner is not None:
            judge.timing_subject, why = trusted_timing_subject(runner, job, task, judge)
            send(conn, "meta", {"timing_process": "runner" if judge.timing_subject is not None else "judge"}
                 | ({"timing_process_reason": "the runner could not load this row: " + why} if why else {}))
        else:
            send(conn, "meta", {"timing_process": "judge"})
        (judge.timing_subject or subject).reserve(sizes)
        for w in workloads:
            current = ("timing", w.uuid)
            send(conn, "phase", "timing", w.uuid, cpu_seconds())
            if judge.timing_subject is not None:
                try:
                    result = _compile_verdict(trusted, judge.time(w, **job.timing))
                except Refused as e:  # the runner's failure, not the row's: the judge times it itself
                    result = {"status": e.status, "reason": e.reason}
                if result["status"] != "PASSED":
                    judge.timing_subject.close()
                    judge.timing_subject = None
                    send(conn, "meta", {"timing_process": "judge", "timing_process_reason": (
                        f"timed in its runner until workload {w.uuid[:8]}, where that failed "
                        f"({result['status']}: {str(result.get('reason', ''))[:1500]}); timed here from there on")})
            if judge.timing_subject is None:
                result = _compile_verdict(trusted, judge.time(w, **job.timing))
            if baseline_missing and job.role == "candidate":
                result["baseline_unavailable"] = baseline_missing
            if result["status"] == "PASSED":
                timed.append((w, result["latency_ms"]))
            send(conn, "workload", "timing", w.uuid, result)
            if result["status"] != "PASSED" and job.role == "candidate":
                break
        if judge.beside_failed:
            send(conn, "meta", {"beside_unavailable": dict(judge.beside_failed)})
        if confirm:
            # The runner under Nsight Compute starts only once every timing is done: alive beside the timed
            # runner (built, then profiled between workloads) it made the candidate's short rows bimodal on an
            # H100 (session 21: rmsnorm 2 of 3 rows under 20 us with p75/p25 > 1.3 and 0.74x the best peer;
            # the same call without confirmation 0 of 4 and 0.94x), while no trusted row was.
            current = ("timing", "")
            send(conn, "phase", "confirmation", None, cpu_seconds())  # the build under ncu: build's deadline
            confirmer = _Confirmer(job, judge, definition)
            if confirmer.error:
                send(conn, "meta", {"confirmation": {"confirmed": False, "reason": confirmer.error}})
            else:
                for w, _ in timed:
                    send(conn, "phase", "confirmation", w.uuid, cpu_seconds())  # a workload's deadline
                    confirmer.profile(w)
                send(conn, "meta", {"confirmation": confirmer.verdict(
                    [ms for _, ms in timed], bool(task.contract.integrity.allowed_torch_ops))})
    except Refused as e:
        gate, uuid = current
        if uuid:
            send(conn, "workload", gate, uuid, {"status": e.status, "gate": "integrity" if e.status == "REJECTED"
                                                 else gate, "reason": e.reason})
        else:
            send(conn, "fatal", e.reason)
    finally:
        if isinstance(subject, RemoteSubject):
            subject.close()
        if judge.timing_subject is not None:
            judge.timing_subject.close()


class _Confirmer:
    """A second runner of the candidate under Nsight Compute (:mod:`kernelcraft.gauntlet.confirm`):
    started once every timing is done (never beside a timed runner), profiled on each timed workload,
    read when it exits."""

    def __init__(self, job: Job, judge, definition):
        from kernelcraft.gauntlet import confirm
        from kernelcraft.gauntlet.judge import Refused, RemoteSubject
        from kernelcraft.measure._ncu import find_ncu
        from kernelcraft.runner.client import ProtocolError, RunnerClient, RunnerDied

        self.error, self.client, self.subject = "", None, None
        self.timeout_s = job.workload_timeout_s
        ncu = find_ncu()
        if ncu is None:
            self.error = "Nsight Compute (ncu) not found: the reported timing is not confirmed out of process"
            return
        self.output = confirm.workdir() / "ncu.csv"
        try:
            self.client = RunnerClient(job.device, launcher=confirm.launcher(ncu), launcher_output=self.output)
            self.client.wait_ready(job.build_timeout_s)
            self.subject = RemoteSubject(self.client, judge, judge.subject.dps, job.workload_timeout_s)
            built = self.subject._ask("build", _build_reply(), timeout=job.build_timeout_s,
                                      solution=job.solution, inputs=list(definition.inputs),
                                      outputs=list(definition.outputs))
            if built.status != "PASSED":
                self.error = f"the candidate did not build under Nsight Compute: {built.status} {built.reason[:500]}"
        except Refused as e:
            try:
                out = self.output.read_text(errors="replace")[-1200:]
            except OSError:
                out = ""
            self.error = f"the runner under Nsight Compute failed: {e.reason[:1500]}; ncu said: {out or '(nothing)'}"
        except (RunnerDied, ProtocolError, OSError) as e:
            tail = self.client.log_tail(1500) if self.client is not None else ""
            try:
                out = self.output.read_text(errors="replace")[-1500:]
            except OSError:
                out = ""
            self.error = (f"the runner under Nsight Compute did not start: {e}; its log: {tail or '(empty)'}; "
                          f"ncu said: {out or '(nothing)'}")
        if self.error:
            try:
                self.close()
            except Exception:  # noqa: BLE001, S110 - already failed; the record says why
                self.client = None

    def profile(self, w) -> None:
        from kernelcraft.gauntlet import confirm
        from kernelcraft.gauntlet.judge import Refused
        from kernelcraft.runner import protocol
        from kernelcraft.task.inputs import make_inputs

        if self.error:
            return
        judge = self.subject.judge
        try:
            self.subject.place(make_inputs(judge.task, w, judge.seed + 0xC0F, judge.device),
                               judge.d.axis_values(w.axes))
            self.subject._ask("profile", protocol.EmptyReply, timeout=min(self.timeout_s, confirm.PROFILE_TIMEOUT_S),
                              calls=confirm.CALLS)
        except Refused as e:
            try:
                out = self.output.read_text(errors="replace")[-800:]
            except OSError:
                out = ""
            self.error = f"the runner under Nsight Compute failed: {e.reason[:1500]}; ncu said: {out or '(nothing)'}"

    def close(self) -> None:
        if self.subject is not None:
            self.subject.close()
        if self.client is not None:
            self.client.close()
            self.client = None

    def verdict(self, latencies_ms: list[float], torch_ops_allowed: bool) -> dict:
        from kernelcraft.gauntlet import confirm
        from kernelcraft.gauntlet.judge import Refused

        try:
            self.close()
        except Refused as e:
            return {"confirmed": False, "reason": e.reason[:800]}
        if self.error:
            return {"confirmed": False, "reason": self.error}
        try:
            text = self.output.read_text(errors="replace")
        except OSError as e:
            return {"confirmed": False, "reason": f"Nsight Compute wrote no output: {e}"}
        out = confirm.judge(confirm.per_call(confirm.parse(text)), latencies_ms, torch_ops_allowed)
        if not out.get("confirmed") and "status" not in out:
            out["ncu_tail"] = "\n".join(text.splitlines()[-8:])[-1500:]
        return out


def _validate(subject, task, solution) -> dict:
    """The request's own verifier (``[validate]``), run by the candidate's runner inside its sandbox
    (:mod:`kernelcraft.gauntlet.validate`): the judge prepares the folder, reads the runner's report."""
    from kernelcraft.gauntlet import validate
    from kernelcraft.gauntlet.judge import Refused
    from kernelcraft.runner import protocol

    spec = task.contract.validate_
    why = validate.supported(solution)
    if why:
        return {"status": "SKIPPED", "reason": why, "command": spec.command}
    import shutil
    import time

    v: dict = {}
    for attempt in (1, 2):  # a verifier that ran out of GPU memory (the device is shared) gets one more run
        try:
            argv, root = validate.prepare(task, solution, subject.client.scratch)
        except (validate.CannotValidate, OSError) as e:
            return {"status": "RUNTIME_ERROR", "command": spec.command,
                    "reason": f"[request-validation] the folder for the command could not be prepared: {e}"}
        try:
            r = subject._ask("validate", protocol.ValidateReply, timeout=min(spec.timeout_s + 60, subject.timeout_s),
                             argv=argv, cwd=str(root), timeout_s=spec.timeout_s)
        except Refused as e:
            return {"status": e.status, "command": spec.command, "reason": f"[request-validation] {e.reason}"}
        finally:
            # the task's copy (contract, verifier) stays out of the candidate's reach for the timings
            shutil.rmtree(root, ignore_errors=True)
        v = validate.verdict(spec.command, r.exit_code, r.timed_out, r.output_tail, spec.timeout_s, r.started,
                             r.error)
        v["attempts"] = attempt
        if not v.get("out_of_memory"):  # verdict() marks a verifier that died of it: worth one retry
            break
        time.sleep(2.0)  # the other jobs' holdouts move on meanwhile
    return v


def _build_reply():
    from kernelcraft.runner.protocol import BuildReply

    return BuildReply
