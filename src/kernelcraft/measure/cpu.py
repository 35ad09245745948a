"""What a CPU timing is worth, and the conditions that keep it from being worth less.

On a CPU, ``eval`` is a development tool: Triton kernels run through the Triton interpreter (NumPy
under a Python loop) and CUDA solutions do not run at all, so a CPU latency says how fast the
interpreter is, not how fast a kernel would be on a GPU. Timing is therefore off by default there
(``eval --time`` turns it on), and every CPU record, table and report carries :data:`NOTE`.

What disturbed it (issue 24): the rmsnorm baseline at batch 16 measured 0.07 ms in one run and
61-192 ms in others on a 2-core machine shared with other processes, because torch's intra-op pool
used every core and competed with everything else. Workers run with one intra-op thread
(``KERNELCRAFT_CPU_THREADS``, default 1), passed as ``OMP_NUM_THREADS`` in the environment the
worker processes start with: torch sizes its pool from it when it is imported, and a forked worker
inherits the pool of the process it was forked from, so it must be set before the first worker
(or template) starts. The CLI sets it; :func:`load_warning` says when the machine is busy anyway.
"""

from __future__ import annotations

import os

NOTE = ("CPU timings (cpu-wall): Triton kernels run through the Triton interpreter and CUDA solutions do not "
        "run, so these latencies and speedups are interpreter figures that say nothing about a GPU")
FEW_REPS = 10  # fewer timed repetitions than this (a contract may lower min_reps): a median few calls decide
WIDE_CI = 0.10  # a 95% confidence interval of the median wider than this fraction of it, either side


def threads() -> int:
    """Intra-op threads per CPU worker: ``KERNELCRAFT_CPU_THREADS``, default 1."""
    raw = os.environ.get("KERNELCRAFT_CPU_THREADS", "1")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"KERNELCRAFT_CPU_THREADS={raw!r}: give a whole number of threads, 1 or more")
    return n


def pin_worker_threads() -> int:
    """Set ``OMP_NUM_THREADS`` for the worker processes this process starts; the thread count."""
    n = threads()
    os.environ["OMP_NUM_THREADS"] = str(n)
    return n


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):  # not on every platform
        return None


def load_warning(workers: int, per_worker: int) -> str:
    """A warning when the machine has no free core for each worker's threads, else ""."""
    load, n = load_average(), cores()
    need = workers * per_worker
    if load is None or load + need <= n:
        return ""
    return (f"the machine is busy: 1-minute load average {load:.1f} on {n} cores, and the timing needs {need} "
            f"more ({workers} worker(s) x {per_worker} thread(s)); CPU timings will include waiting for a core")


def timing_warnings(report) -> list[str]:
    """Workloads whose CPU timing rests on few repetitions or has a wide confidence interval."""
    few, wide = [], []
    for s in report.solutions:
        for w in s.workloads:
            t = w.timing or {}
            if w.status != "PASSED" or not t:
                continue
            label = f"{s.name} {w.uuid[:8]}"
            if t.get("reps", FEW_REPS) < FEW_REPS:
                few.append(f"{label} ({t['reps']})")
            med, lo, hi = t.get("median_ms") or 0.0, t.get("ci_low_ms") or 0.0, t.get("ci_high_ms") or 0.0
            if med > 0 and max(med - lo, hi - med) > WIDE_CI * med:
                wide.append(f"{label} (-{(med - lo) / med:.0%}/+{(hi - med) / med:.0%})")
    out = []
    if few:
        out.append(f"few timed repetitions (under {FEW_REPS}): {', '.join(few[:6])}"
                   + (f" and {len(few) - 6} more" if len(few) > 6 else "")
                   + "; raise --budget-ms for medians that mean something")
    if wide:
        out.append(f"wide 95% confidence intervals of the median (over {WIDE_CI:.0%}): {', '.join(wide[:6])}"
                   + (f" and {len(wide) - 6} more" if len(wide) > 6 else ""))
    return out
