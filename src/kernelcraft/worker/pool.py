"""The parent's side of a worker: spawn it, feed it one job, enforce the deadline of each phase.

A worker that hangs past a phase's deadline is killed (TIMEOUT); one that dies (a segfault, an
abort, an illegal memory access that takes the CUDA context down, ``os._exit``) is reported with its
signal or exit code and the tail of its log (RUNTIME_ERROR). Either way the parent keeps every
message the worker sent before, and the next job gets a fresh process.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
from dataclasses import dataclass, field
from pathlib import Path

from kernelcraft.worker.child import Job, worker_main


@dataclass
class JobOutcome:
    build: tuple[str, str] | None = None  # (status, reason)
    workloads: dict[str, dict[str, dict]] = field(default_factory=dict)  # uuid -> gate -> fields
    died: str = ""  # why the worker ended abnormally (timeout, signal, exit code, harness error)
    died_status: str = ""  # TIMEOUT or RUNTIME_ERROR
    died_phase: tuple[str, str | None] | None = None  # (gate, uuid) in progress when it ended


def _log_tail(path: str, n: int = 2500) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return text[-n:].strip()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


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
    elif kind in ("phase", "fatal", "done"):
        return ""
    else:
        return f"an unknown message {str(msg)[:80]!r} arrived"
    if key in answered:
        return f"a second result for {key[0]} {key[1] or ''} arrived".rstrip()
    answered.add(key)
    return ""


def run_job(job: Job, build_timeout_s: float, workload_timeout_s: float) -> JobOutcome:
    ctx = mp.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=worker_main, args=(child_conn, job), daemon=True)
    proc.start()
    child_conn.close()
    out = JobOutcome()
    phase: tuple[str, str | None] = ("start", None)
    answered: set[tuple[str, str | None]] = set()  # phases whose one result has arrived
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
                msg = parent_conn.recv()
            except (EOFError, OSError):
                proc.join(timeout=10)
                out.died_status, out.died_phase = "RUNTIME_ERROR", phase
                where = f" on workload {phase[1]}" if phase[1] else ""
                out.died = f"the worker process {_describe_exit(proc.exitcode)} during {phase[0]}{where}"
                tail = _log_tail(job.log_path)
                if tail:
                    out.died += f"; its output ended with:\n{tail}"
                break
            kind = msg[0]
            forged = _out_of_protocol(msg, phase, answered)
            if forged:
                out.died_status, out.died_phase = "REJECTED", phase
                out.died = f"[forged-result] {forged}; the worker was stopped"
                break
            if kind == "phase":
                phase = (msg[1], msg[2])
                deadline = build_timeout_s if msg[1] == "build" else workload_timeout_s
            elif kind == "build":
                out.build = (msg[1], msg[2])
            elif kind == "workload":
                out.workloads.setdefault(msg[2], {})[msg[1]] = msg[3]
            elif kind == "fatal":
                out.died_status, out.died_phase = "RUNTIME_ERROR", phase
                out.died = f"harness error in the worker (not the candidate's verdict):\n{msg[1]}"
            elif kind == "done":
                break
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(timeout=30)
        parent_conn.close()
    return out
