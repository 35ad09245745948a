"""The timing a runner reported, confirmed from outside it (gate 6, before promotion on a GPU).

A runner times its candidate itself, so its numbers are claims. Nsight Compute measures the same
kernels from another process: the candidate is built again in a second runner started under
``ncu`` (``--metrics gpu__time_duration.sum``, clocks and caches left as they are, caches flushed by
the runner before each call outside the profiled range), called three times per workload on the
judge's inputs, and every kernel it launched, on any stream, is summed per call. Each call begins
with a marker kernel (``spin_kernel``), so the kernels of one call are those between two markers.

- a reported latency below ``(1 - MARGIN)`` of that sum is ``[timing-mismatch]``: the runner said
  the work took less time than the device spent on it;
- a call whose kernels include torch's own compute (``at::native``, cuBLAS/CUTLASS GEMMs, cuDNN;
  fills and copies excepted) is ``[torch-compute]`` seen from outside, unless the contract allows
  torch ops;
- where ncu is missing or its output cannot be read, nothing is rejected: the record says the timing
  is unconfirmed, and a contract's promotion then does not happen (``confirmed`` false).

Limits: native code of the candidate can hide kernels from the profiler (cudaProfilerStop, which the
static gate refuses in sources); ncu serialises kernels, so overlapping kernels on two streams (which
the static gate also refuses) add up.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
import tempfile
from pathlib import Path

MARGIN = 0.20  # reported latency may be this much below Nsight Compute's kernel time and still agree
CALLS = 3
# the profiled calls of one workload may take this long (ncu's per-kernel overhead is milliseconds):
# a stalled profiler costs a candidate at most this, and its record says unconfirmed
PROFILE_TIMEOUT_S = 60.0
MARKER = "spin_kernel"
TORCH_COMPUTE = re.compile(r"at::native::|cublas|cutlass|sm90_xmma|sm80_xmma|gemm|cudnn", re.IGNORECASE)
TORCH_HARMLESS = re.compile(r"FillFunctor|fill_kernel|zero|copy_kernel|CopyFunctor|direct_copy", re.IGNORECASE)


def launcher(ncu: str) -> list[str]:
    return [ncu, "--target-processes", "all", "--profile-from-start", "off", "--metrics",
            "gpu__time_duration.sum", "--csv", "--print-units", "base", "--clock-control", "none",
            "--cache-control", "none", "--print-kernel-base", "demangled"]


def parse(text: str) -> list[tuple[str, float]]:
    """(kernel name, duration ns) per profiled launch, in order, from ncu's CSV (the details page:
    one row per launch and metric; or the raw page: one row per launch)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    out: list[tuple[str, float]] = []
    for r in rows:
        if "Metric Name" in r:
            if r.get("Metric Name") != "gpu__time_duration.sum":
                continue
            value, unit = r.get("Metric Value", ""), r.get("Metric Unit", "")
        else:
            value, unit = r.get("gpu__time_duration.sum", ""), "nsecond"
        try:
            v = float(value.replace(",", ""))
        except ValueError:
            continue
        if not r.get("Kernel Name", "").strip():
            continue  # the raw page's units row
        scale = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}.get(unit, 1.0)
        out.append((r["Kernel Name"], v * scale))
    return out


def per_call(launches: list[tuple[str, float]]) -> list[list[tuple[str, float]]]:
    """The candidate's launches of each call: what lies between one marker and the next."""
    calls: list[list[tuple[str, float]]] = []
    for name, ns in launches:
        if MARKER in name:
            calls.append([])
        elif calls:
            calls[-1].append((name, ns))
    return calls


def judge(calls: list[list[tuple[str, float]]], latencies_ms: list[float], torch_ops_allowed: bool) -> dict:
    """Per workload (``latencies_ms``, in the order profiled, CALLS calls each): the kernel time, the
    verdict and its reason."""
    if len(calls) != CALLS * len(latencies_ms):
        return {"confirmed": False, "reason": f"the profile held {len(calls)} calls, {CALLS * len(latencies_ms)} "
                f"were made: it cannot be matched to the workloads"}
    per_workload = []
    for i, reported in enumerate(latencies_ms):
        mine = calls[i * CALLS:(i + 1) * CALLS]
        kernel_ms = statistics.median(sum(ns for _, ns in c) / 1e6 for c in mine)
        names = sorted({n for c in mine for n, _ in c})
        per_workload.append({"ncu_ms": kernel_ms, "reported_ms": reported, "kernels": names[:20]})
        if not torch_ops_allowed:
            bad = [n for n in names if TORCH_COMPUTE.search(n) and not TORCH_HARMLESS.search(n)]
            if bad:
                return {"confirmed": False, "status": "REJECTED", "workload": i, "per_workload": per_workload,
                        "reason": f"[torch-compute] seen by Nsight Compute from outside the runner: the candidate's "
                                  f"calls ran torch's own kernels {bad[:3]}"}
        if reported < (1 - MARGIN) * kernel_ms:
            return {"confirmed": False, "status": "REJECTED", "workload": i, "per_workload": per_workload,
                    "reason": f"[timing-mismatch] the runner reported {reported:.5f} ms, but Nsight Compute measured "
                              f"{kernel_ms:.5f} ms of kernels per call (every stream summed): more than {MARGIN:.0%} "
                              "apart, the reported time is not the work's"}
    return {"confirmed": True, "per_workload": per_workload, "margin": MARGIN}


def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="kc_confirm_"))
