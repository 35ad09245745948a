"""The parent's side of a worker: spawn it, feed it one job, enforce the deadline of each phase.

A worker that hangs past a phase's deadline is killed (TIMEOUT); one that dies (a segfault, an
abort, an illegal memory access that takes the CUDA context down, ``os._exit``) is reported with its
signal or exit code and the tail of its log (RUNTIME_ERROR). Either way the parent keeps every
message the worker sent before, and the next job gets a fresh process.

Every job gets a process of its own, but not a cold one: processes are forked from a template that
has imported torch, triton and the gauntlet once (:mod:`kernelcraft.worker.template`), and while a
job runs, spares for the same device are started (:func:`warm_main`), so the next job finds one
waiting (only when the caller says another job follows). A spare is used only if it is alive and
the environment has not changed since it was started. ``KERNELCRAFT_WARM_WORKER=0`` turns spares
off, ``KERNELCRAFT_FORKSERVER=0`` the template (each process then imports everything itself).

What a worker sends is data, never code: messages are JSON (:func:`decode`), because candidate code
runs in that process and could write to the pipe, and unpickling its bytes here would run whatever
it put there in the process that records results.

A job with ``gpu_slot`` builds first and then, before each workload it checks, asks for its device's
GPU slot (``("ready",)``): the parent answers ``("go",)`` once it holds the slot *shared*, which
other candidates' checks may overlap; after the workload, once its own GPU work has finished, the
worker gives the hold up (``("idle",)``). Before timing it asks again (``("ready", "timing")``):
the parent answers once it holds the slot *exclusively*, which it keeps until the process has
exited. So no other candidate's GPU work runs while one is timed, builds and checks overlap
(:mod:`kernelcraft.worker.executor` runs several jobs per GPU for that), and a timing waits only
for the workload checks in flight, not for other candidates' whole check phases. (On the H200, with
one hold through all checks, a candidate waited ~1.3 s for its exclusive hold; with one hold per
workload one lane's throughput was the same, 38.2 candidates/min: results/h200x2/README.md.)
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelcraft.runner.client import describe_exit
from kernelcraft.worker import template
from kernelcraft.worker.child import Job, warm_main

MAX_MESSAGE_BYTES = 64 << 20  # one message from a worker: results of one workload, or a traceback

# (device, visible GPU) -> started spares, oldest first: (process, parent end of the pipe,
# environment at spawn)
_spares: dict[tuple[str, str | None], list[tuple]] = {}
_spares_lock = threading.Lock()
_running: dict[str, int] = {}  # a running job's log path -> its worker's pid
_warm: set[int] = set()  # pids of spares whose ("warm",) prestart has read
_starting: dict[tuple[str, str | None], int] = {}  # spares being started, outside the lock


def running_workers() -> dict[str, int]:
    """The worker processes running jobs now, by each job's log path."""
    with _spares_lock:
        return dict(_running)


def decode(raw: bytes) -> tuple | None:
    """A worker's message as a tuple of plain data (JSON: strings, numbers, lists, dicts); None
    when the bytes are not one (a pickle, garbage): the harness's own worker never sends such."""
    try:
        msg = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(msg, list) or not msg or not isinstance(msg[0], str):
        return None
    return tuple(msg)


def _spawn(device: str, visible: str | None = None) -> tuple:
    """A new worker process for ``device``, forked from the template where there is one. Starting
    one can wait for the template's imports (its first use), so callers do not hold the lock.
    Neither the template nor the worker gets this process's secrets (API keys, database URLs): the
    worker forks the candidate's runner, and a process's first environment stays readable in it."""
    ctx = template.context(device)
    env = template.scrubbed(os.environ)
    parent_conn, child_conn = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=warm_main, args=(child_conn, device, visible, env), daemon=True)
    if ctx.get_start_method() == "spawn":
        with template.environment(env):  # an exec'd process: its first environment is what it is given
            proc.start()
    else:
        proc.start()
    child_conn.close()
    return proc, parent_conn, env


def _add_spares(key: tuple[str, str | None], keep: int) -> None:
    """Start spares for ``key`` until ``keep`` wait or are being started (outside the lock)."""
    with _spares_lock:
        need = keep - len(_spares.get(key, [])) - _starting.get(key, 0)
        if need <= 0:
            return
        _starting[key] = _starting.get(key, 0) + need
    started = 0
    try:
        for _ in range(need):
            spare = _spawn(*key)
            with _spares_lock:
                _spares.setdefault(key, []).append(spare)
                _starting[key] -= 1
            started += 1
    finally:
        with _spares_lock:
            _starting[key] -= need - started


def _warm_enabled() -> bool:
    return os.environ.get("KERNELCRAFT_WARM_WORKER", "1") != "0"


def _discard(spare: tuple) -> None:
    _warm.discard(spare[0].pid)
    spare[1].close()
    spare[0].kill()
    spare[0].join(timeout=10)


def _take(device: str, spare_next: bool = True, visible: str | None = None, keep: int = 1) -> tuple:
    """A started worker for ``device``: the oldest usable spare, else a new process; then, when
    another job is expected (``spare_next``), new spares until ``keep`` wait for it (a busy GPU
    lane keeps several, :func:`kernelcraft.worker.executor.spares_for`: on the H200 a lane with one
    spare took it again ~3 s after it was spawned, half-way through its ~10 s of imports; forked from
    the template a spare is ready in milliseconds). A spare nobody takes is pure cost: on a
    2-core machine it slowed the test suite, where most evaluations hold one candidate.
    ``visible``: the one GPU the process may see (its CUDA_VISIBLE_DEVICES), None to inherit the
    parent's."""
    key = (device, visible)
    worker, stale = None, []
    with _spares_lock:
        waiting = _spares.get(key, [])
        while waiting and worker is None:
            spare = waiting.pop(0)
            if spare[0].is_alive() and spare[2] == template.scrubbed(os.environ):
                worker = spare
                _warm.discard(spare[0].pid)
            else:
                stale.append(spare)
        if not waiting:
            _spares.pop(key, None)
    for spare in stale:
        _discard(spare)
    worker = worker or _spawn(device, visible)
    if spare_next and _warm_enabled():
        _add_spares(key, max(1, keep))
    return worker[0], worker[1]


def prestart(device: str, visible: str | None = None, keep: int = 1, timeout_s: float = 120.0) -> float:
    """Start ``keep`` spares for ``device`` and wait until each has imported what a job needs (it
    says ``("warm",)``): a design loop's pool before its first candidate. Returns the seconds it
    took."""
    t0 = time.monotonic()
    if not _warm_enabled():
        return 0.0
    _add_spares((device, visible), keep)
    with _spares_lock:
        pending = [sp for sp in _spares.get((device, visible), []) if sp[0].pid not in _warm]
    for proc, conn, _ in pending:
        left = timeout_s - (time.monotonic() - t0)
        try:
            if left > 0 and conn.poll(left):
                if decode(conn.recv_bytes(MAX_MESSAGE_BYTES)) == ("warm",):
                    _warm.add(proc.pid)
                else:  # not a spare's first word: keep no process that says otherwise
                    proc.kill()
        except (EOFError, OSError):
            pass  # it died: _take replaces a dead spare
    return time.monotonic() - t0


def shutdown_spares() -> None:
    with _spares_lock:
        for waiting in _spares.values():
            for spare in waiting:
                _discard(spare)
        _spares.clear()


SLOT_WAIT_FACTOR = 3.0  # a job gives up waiting for the GPU slot after this many times its phase's deadline
# without any sign of life from the jobs of its lane (a hold taken or given up, a message from any worker)


class GpuSlot:
    """One device's GPU as the jobs of its lane share it: any number of *shared* holders (checking
    correctness) or one *exclusive* holder (timing), never both. A job waiting for the exclusive
    hold keeps new shared holders out, so a timing is not starved by a stream of checks.

    Waits take a ``timeout`` (None: forever) and return whether the hold was granted: the wait gives up once
    ``timeout`` seconds pass with no activity on the slot (a hold taken or given up, or ``touch``: each job's
    thread calls it for every message its worker sends), so a wait behind a long but live timing is never
    cut, only one behind a lane where nothing moves. ``who`` names the job, so that a wait that gives up can
    say who held the GPU (``describe``). A job's thread that waits here reads nothing from its worker
    meanwhile, so without a bound its own no-progress deadline never fires and a holder that never lets go
    (a harness bug) would hold the whole evaluation with no verdict."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        # the holders and waiters by name; their counts are the lists' lengths ("" for an unnamed job)
        self._shared: list[str] = []
        self._exclusive: list[str] = []  # at most one
        self._waiting: list[str] = []  # jobs waiting for the exclusive hold
        self._activity = time.monotonic()  # the last hold taken or given up, or touch()

    def touch(self) -> None:
        """A sign of life from a job of this lane (its worker sent a message)."""
        self._activity = time.monotonic()  # a float store: atomic, no lock needed

    def acquire_shared(self, timeout: float | None = None, who: str = "") -> bool:
        with self._cond:
            while self._exclusive or self._waiting:
                if not self._wait(timeout):
                    return False
            self._shared.append(who)
            self._activity = time.monotonic()
        return True

    def release_shared(self, who: str = "") -> None:
        with self._cond:
            _remove_one(self._shared, who)
            self._activity = time.monotonic()
            self._cond.notify_all()

    def acquire_exclusive(self, timeout: float | None = None, who: str = "") -> bool:
        with self._cond:
            self._waiting.append(who)
            try:
                while self._exclusive or self._shared:
                    if not self._wait(timeout):
                        return False
            finally:
                _remove_one(self._waiting, who)
                self._cond.notify_all()  # a check kept out by this wait may go on
            self._exclusive = [who]
            self._activity = time.monotonic()
        return True

    def release_exclusive(self) -> None:
        with self._cond:
            self._exclusive = []
            self._activity = time.monotonic()
            self._cond.notify_all()

    def describe(self) -> str:
        """Who holds the GPU and who waits to time alone, in words (for a wait that ran out)."""
        with self._cond:
            parts = []
            if self._exclusive:
                parts.append(f"timing alone: {self._exclusive[0] or '?'}")
            if self._shared:
                parts.append("checking: " + ", ".join(n or "?" for n in self._shared))
            if self._waiting:
                parts.append("waiting to time alone: " + ", ".join(n or "?" for n in self._waiting))
            return "; ".join(parts) or "nobody holds it"

    def _wait(self, timeout: float | None) -> bool:
        """One wait on the condition; False once ``timeout`` seconds have passed with no activity. touch()
        does not notify, so a bounded wait wakes at least every second to look."""
        if timeout is None:
            self._cond.wait()
            return True
        left = self._activity + timeout - time.monotonic()
        if left <= 0:
            return False
        self._cond.wait(min(left, 1.0))
        return True


def _remove_one(names: list[str], who: str) -> None:
    """Take ``who`` off a holder list, or another entry where it is not there (a release that named no job
    still gives up one hold, as the counter it replaces did)."""
    if who in names:
        names.remove(who)
    elif names:
        names.pop()


@dataclass
class JobOutcome:
    build: tuple[str, str] | None = None  # (status, reason)
    workloads: dict[str, dict[str, dict]] = field(default_factory=dict)  # uuid -> gate -> fields
    died: str = ""  # why the worker ended abnormally (timeout, signal, exit code, harness error)
    died_status: str = ""  # TIMEOUT or RUNTIME_ERROR
    died_phase: tuple[str, str | None] | None = None  # (gate, uuid) in progress when it ended
    slot_wait_s: float = 0.0  # waiting for the device's GPU slot, shared and exclusive holds together
    # monotonic times, this process: worker taken; the GPU slot held shared (each workload's check)
    # and exclusively (timing, until the process exited; None: never); the worker's "done"
    taken_at: float = 0.0
    slot_shared: list[tuple[float, float]] = field(default_factory=list)
    slot_held: tuple[float, float] | None = None
    done_at: float | None = None
    # wall seconds per phase the worker announced ("start": spawn/imports until the build began;
    # then build, correctness, generalization, timing, ...), slot waits included where they fell
    phases_s: dict[str, float] = field(default_factory=dict)
    # CPU seconds the worker reported (its own and its compilers'), in all and per phase ("start":
    # what it used before its build began: its imports where it was not forked warm). Reported by a
    # process that runs candidate code: a diagnostic, never part of a verdict.
    cpu_s: float | None = None
    phases_cpu_s: dict[str, float] = field(default_factory=dict)
    # what the judge says of the job: the runner's sandbox (which protections held), a trusted
    # row's implementation (library and version)
    meta: dict = field(default_factory=dict)


def _log_tail(path: str, n: int = 2500) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return text[-n:].strip()


def _out_of_protocol(msg: tuple, phase: tuple[str, str | None], answered: set) -> str:
    """Every result answers the phase the worker announced last, once. Anything else was not sent
    by the harness's own loop (candidate code writing to the pipe)."""
    kind = msg[0] if msg else None
    if kind == "build":
        key: tuple[str, str | None] = ("build", None)
        if phase != key:
            return f"a build result arrived during {phase[0]}"
    elif kind == "workload":
        key = (msg[1], msg[2])
        if key != phase:
            return f"a {msg[1]} result for {msg[2]} arrived during {phase[0]} of {phase[1]}"
    elif kind == "ready" and msg == ("ready", "timing"):
        # after the checks, before the first timing: once, and only once the GPU was granted
        if ("ready", None) not in answered or ("ready", "timing") in answered or phase[0] == "timing":
            return f"a request to time alone on the GPU arrived during {phase[0]}"
        answered.add(("ready", "timing"))
        answered.discard(("holding", None))
        return ""
    elif kind == "ready":
        # before a check (or a quick build): not while holding it already, never once timing began
        if (msg != ("ready",) or ("ready", "timing") in answered
                or ("holding", None) in answered
                or phase[0] not in ("build", "correctness", "generalization", "validation")):
            return f"a request for the GPU arrived during {phase[0]}"
        answered.update({("ready", None), ("holding", None)})
        return ""
    elif kind == "idle":
        if msg != ("idle",) or ("holding", None) not in answered:
            return f"a release of a GPU hold it did not have arrived during {phase[0]}"
        answered.discard(("holding", None))
        return ""
    elif kind in ("phase", "fatal", "done"):
        return ""
    elif kind == "meta":
        if len(msg) != 2 or not isinstance(msg[1], dict):
            return "a malformed meta message arrived"
        return ""
    else:
        return f"an unknown message {str(msg)[:80]!r} arrived"
    if key in answered:
        return f"a second result for {key[0]} {key[1] or ''} arrived".rstrip()
    answered.add(key)
    return ""


def _cpu_lap(out: JobOutcome, phase: str, reported: object, before: float) -> float:
    """Book the worker's reported CPU seconds since its last report to ``phase``; a report that is
    not a number, or runs backwards, is ignored (diagnostics only: the worker runs candidate code)."""
    if (isinstance(reported, (int, float)) and not isinstance(reported, bool) and math.isfinite(reported)
            and reported >= before):
        out.phases_cpu_s[phase] = out.phases_cpu_s.get(phase, 0.0) + reported - before
        out.cpu_s = float(reported)
        return float(reported)
    return before


def run_job(job: Job, build_timeout_s: float, workload_timeout_s: float, spare_next: bool = False,
            visible: str | None = None, slot: GpuSlot | None = None, keep: int = 1,
            on_phase: Callable[[str, str | None], None] | None = None) -> JobOutcome:
    """Run one job in a worker of its own; ``spare_next``: another job will follow, so start its
    worker now (``keep``: how many spares to hold for this device). ``slot``: the device's GPU slot, held shared from the built job's request for the GPU (the
    job must have ``gpu_slot``) and exclusively from its request to time until the process has
    exited. ``on_phase(gate, uuid)``: called as the worker announces each phase (progress display
    only: the worker runs candidate code, so what it announces decides nothing)."""
    proc, parent_conn = _take(job.device, spare_next, visible, keep)
    with _spares_lock:
        _running[job.log_path] = proc.pid
    out = JobOutcome(taken_at=time.monotonic())
    held = ""  # "shared" or "exclusive": how this job holds the slot now
    since = 0.0
    try:
        parent_conn.send(job)
    except (OSError, ValueError):
        pass  # the worker died before taking its job: reported below as the process's exit
    phase: tuple[str, str | None] = ("start", None)
    phase_t0 = out.taken_at
    cpu_t0 = 0.0  # the worker's CPU seconds at its last report
    answered: set[tuple[str, str | None]] = set()  # phases whose one result has arrived

    who = f"{job.solution.get('name') or job.role} ({job.role})"

    def end_shared() -> None:
        """Give up this job's shared hold and book its interval."""
        nonlocal held
        slot.release_shared(who)
        out.slot_shared.append((since, time.monotonic()))
        held = ""

    # Spawning and importing torch is the harness's own cost; give it the build's allowance.
    deadline = build_timeout_s
    try:
        while True:
            if not parent_conn.poll(deadline):
                where = f"workload {phase[1]}" if phase[1] else phase[0]
                out.died_status, out.died_phase = "TIMEOUT", phase
                out.died = f"no progress within {deadline:g} s during {phase[0]} ({where}); the worker was killed"
                break
            try:
                msg = decode(parent_conn.recv_bytes(MAX_MESSAGE_BYTES))
                if slot is not None:
                    slot.touch()  # this lane is alive: other jobs' bounded waits for the GPU go on
            except (EOFError, OSError):
                proc.join(timeout=10)
                out.died_status, out.died_phase = "RUNTIME_ERROR", phase
                where = f" on workload {phase[1]}" if phase[1] else ""
                out.died = f"the worker process {describe_exit(proc.exitcode)} during {phase[0]}{where}"
                tail = _log_tail(job.log_path)
                if tail:
                    out.died += f"; its output ended with:\n{tail}"
                break
            if msg is None:
                out.died_status, out.died_phase = "REJECTED", phase
                out.died = ("[forged-result] the worker's pipe carried bytes that are not one of the harness's "
                            "messages (candidate code writing to it); the worker was stopped")
                break
            kind = msg[0]
            if msg == ("warm",) and phase == ("start", None) and not answered:
                continue  # the spare finished its imports (sent before it read the job)
            forged = _out_of_protocol(msg, phase, answered)
            if forged:
                out.died_status, out.died_phase = "REJECTED", phase
                out.died = f"[forged-result] {forged}; the worker was stopped"
                break
            if kind == "phase":
                now = time.monotonic()
                out.phases_s[phase[0]] = out.phases_s.get(phase[0], 0.0) + now - phase_t0
                cpu_t0 = _cpu_lap(out, phase[0], msg[3] if len(msg) > 3 else None, cpu_t0)
                phase, phase_t0 = (msg[1], msg[2]), now
                # a build, or the confirmation's build under Nsight Compute, gets the build's deadline
                building = msg[1] == "build" or (msg[1] == "confirmation" and msg[2] is None)
                deadline = build_timeout_s if building else workload_timeout_s
                if on_phase is not None:
                    on_phase(msg[1], msg[2])
            elif kind == "build":
                out.build = (msg[1], msg[2])
            elif kind == "ready":
                t0 = time.monotonic()
                if slot is not None:
                    # bounded: while this thread waits it reads nothing from the worker, so the phase's own
                    # deadline cannot fire; it gives up only after SLOT_WAIT_FACTOR x that deadline in which
                    # nothing on the lane moved (GpuSlot.touch: any worker's message)
                    bound = SLOT_WAIT_FACTOR * deadline
                    if len(msg) == 1:  # built: checks may share the GPU
                        granted = slot.acquire_shared(bound, who)
                        kind_held = "shared"
                    else:  # ("ready", "timing"): alone on the GPU until the process has exited
                        if held == "shared":
                            end_shared()
                        granted = slot.acquire_exclusive(bound, who)
                        kind_held = "exclusive"
                    out.slot_wait_s += time.monotonic() - t0
                    if not granted:
                        where = f"workload {phase[1]}" if phase[1] else phase[0]
                        out.died_status, out.died_phase = "TIMEOUT", phase
                        out.died = (f"waited for the GPU ({'to time alone' if kind_held == 'exclusive' else 'to check'}) "
                                    f"during {phase[0]} ({where}), and for {bound:g} s nothing on its lane moved: {slot.describe()}; the worker was "
                                    "killed (a harness stall, not this solution's verdict: run it again with "
                                    "`--no-overlap`: one job on the GPU at a time)")
                        break
                    held, since = kind_held, time.monotonic()
                else:
                    out.slot_wait_s += time.monotonic() - t0
                try:
                    parent_conn.send(("go",))
                except (OSError, ValueError):
                    pass  # it died meanwhile: the next recv says how
            elif kind == "idle":
                if slot is not None and held == "shared":
                    end_shared()
            elif kind == "workload":
                out.workloads.setdefault(msg[2], {})[msg[1]] = msg[3]
            elif kind == "meta":
                out.meta.update(msg[1])
            elif kind == "fatal":
                out.died_status, out.died_phase = "RUNTIME_ERROR", phase
                out.died = f"harness error in the worker (not the candidate's verdict):\n{msg[1]}"
            elif kind == "done":
                out.done_at = time.monotonic()
                out.phases_s[phase[0]] = out.phases_s.get(phase[0], 0.0) + out.done_at - phase_t0
                _cpu_lap(out, phase[0], msg[1] if len(msg) > 1 else None, cpu_t0)
                break
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(timeout=30)
        parent_conn.close()
        with _spares_lock:
            _running.pop(job.log_path, None)
        # only now: work the process left queued on the GPU ended with it
        if held == "shared":
            end_shared()
        elif held == "exclusive":
            out.slot_held = (since, time.monotonic())
            slot.release_exclusive()
    return out
