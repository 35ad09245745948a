"""The template worker processes are forked from.

A worker process imports torch, torch._dynamo, triton and the gauntlet before it can take a job:
~14 CPU-seconds and ~10 s of wall time per process on the 2 x H200 host (scripts/worker_profile.py),
against ~1.2 CPU-s for the job itself (a silu_mul candidate checked and timed). Every candidate
still runs in a process of its own; the processes are forked from a template that did those imports
once (multiprocessing's forkserver, with :mod:`kernelcraft.worker._template_cuda` or
``_template_cpu`` as its preload), so each pays only for its own work.

The template never touches a GPU: CUDA is initialized in each forked worker, after it has set its
own ``CUDA_VISIBLE_DEVICES`` (forking a process that has initialized CUDA is not safe). Each worker
replaces the template's environment with the one its parent had when it asked for the process
(:func:`kernelcraft.worker.child.warm_main`).

One forkserver serves a process, with one template: the kind of the first worker asked for
(``cuda``, or ``cpu``, whose template switches the Triton interpreter on before triton is
imported, which cannot be undone). Workers of the other kind are spawned cold, as they are where
forkserver is missing (not Linux) or ``KERNELCRAFT_FORKSERVER=0``.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import re
import sys
import threading

_lock = threading.Lock()
_kind: str | None = None  # the kind of the one template this process's forkserver preloads


# Environment variables that look like credentials: kept out of every worker process (and of the
# template they fork from), since a worker forks the runner that imports candidate code, and a
# process's initial environment stays readable in its memory and /proc/self/environ.
SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|COOKIE|SESSION|AUTH|PRIVATE|DATABASE_URL|DSN|^KERNELCRAFT_DB$",
                    re.IGNORECASE)
_env_lock = threading.Lock()


def scrubbed(env) -> dict[str, str]:
    return {k: v for k, v in env.items() if not SECRET.search(k)}


@contextlib.contextmanager
def environment(env: dict[str, str]):
    """``os.environ`` is ``env`` while a process (and, the first time, the forkserver) starts: both
    take this process's environment as their own initial one."""
    with _env_lock:
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


def kind_of(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"


def enabled() -> bool:
    return (os.environ.get("KERNELCRAFT_FORKSERVER", "1") != "0" and sys.platform.startswith("linux")
            and "forkserver" in mp.get_all_start_methods())


def context(device: str):
    """The multiprocessing context a worker for ``device`` is started with: the forkserver whose
    template has this kind's imports, else spawn."""
    global _kind
    if not enabled():
        return mp.get_context("spawn")
    kind = kind_of(device)
    with _lock:
        if _kind is None:
            _kind = kind
            mp.set_forkserver_preload([f"kernelcraft.worker._template_{kind}"])
            from multiprocessing import forkserver

            with environment(scrubbed(os.environ)):
                forkserver.ensure_running()  # every worker forked from it inherits this first environment
        if _kind != kind:
            return mp.get_context("spawn")
    return mp.get_context("forkserver")


def warm(template_kind: str) -> None:
    """The template's imports (the forkserver's preload runs this once)."""
    if template_kind == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported anywhere in the template
    import gc

    from kernelcraft.worker.child import warm_imports

    warm_imports()
    # Everything imported so far lives as long as every worker: out of the collector's reach
    # (Python's gc docs: freeze before fork), so a worker's collections neither walk the template's
    # objects nor write their headers, which would copy the pages they sit on into each worker.
    # KERNELCRAFT_GC_FREEZE=0 leaves them in (a diagnostic: the freeze's effect, measured).
    if os.environ.get("KERNELCRAFT_GC_FREEZE", "1") != "0":
        gc.collect()
        gc.freeze()
    # The template never runs a job: at its exit there is nothing to tear down, and interpreter
    # teardown printed ~30 lines of nanobind's "leaked instance" report (Triton's bindings) after the
    # CLI had returned. It leaves at once instead.
    import atexit

    atexit.register(os._exit, 0)


def shutdown() -> None:
    """End the forkserver (and its template) before the command returns; a later worker starts it again."""
    global _kind
    from multiprocessing import forkserver

    with _lock:
        stop = getattr(forkserver._forkserver, "_stop", None)  # CPython 3.11-3.13
        if stop is not None:
            try:
                stop()
            except OSError:
                pass
        _kind = None
