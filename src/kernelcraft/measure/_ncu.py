"""Nsight Compute (``ncu``): the command lines kernelcraft runs, and its raw CSV condensed per kernel.

Collection profiles only what runs between ``cudaProfilerStart`` and ``cudaProfilerStop``
(``--profile-from-start off``); the target calls the solution there after its warm-up, so
compilation, autotuning and input generation are never profiled. The report is read back with
``ncu --import R --csv --page raw --print-units base``: a header row of metric names (after the
identity columns ``ID``, ``Kernel Name``, ``Block Size``, ...), a units row, then one row per
profiled kernel launch, every field quoted. Base units make durations nanoseconds and sizes bytes.

Metric names differ between Nsight Compute versions (the warp-stall family above all). Sections
(``--section``) collect whatever names the installed version defines; the summary looks for each
quantity under every name known for it and leaves it None when none is present.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
from dataclasses import dataclass, field
from statistics import fmean

from kernelcraft.measure._ptxas import short_name

# Sections every Nsight Compute since 2020 ships (identifiers, not file names).
SECTIONS = ["SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats"]
# Added by name so they are there even if a version's sections move them elsewhere.
METRICS = [
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    # local memory traffic: register spills (and local arrays) at run time
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
]
LAUNCH_COUNT = 60  # at most this many kernel launches are profiled (each is replayed per pass)

# A unit at or above this share of its peak is "the" limiter (Nsight Compute's own guidance calls
# throughput above 60% of peak good utilization); below it on both, latency limits the kernel.
BOUND_PCT = 60.0

# Quantity -> names it has had, first match wins.
_NAMES = {
    "duration_ns": ["gpu__time_duration.sum", "gpu__time_duration.avg", "gpu__time_duration"],
    "dram_pct": ["dram__throughput.avg.pct_of_peak_sustained_elapsed",
                 "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"],
    "sm_pct": ["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
    "memory_pct": ["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"],
    "achieved_occupancy_pct": ["sm__warps_active.avg.pct_of_peak_sustained_active"],
    "theoretical_occupancy_pct": ["sm__maximum_warps_per_active_cycle_pct"],
    "registers_per_thread": ["launch__registers_per_thread"],
    "shared_static_bytes": ["launch__shared_mem_per_block_static"],
    "shared_dynamic_bytes": ["launch__shared_mem_per_block_dynamic"],
    "local_load_bytes": ["l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"],
    "local_store_bytes": ["l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"],
    "grid_size": ["launch__grid_size"],
    "block_size": ["launch__block_size"],
    "sm_count": ["device__attribute_multiprocessor_count"],
}
# Warp-stall families, in order of preference; the share of a reason is its value over the sum of
# the family's reasons, so each family's own unit (cycles per issue, samples) cancels out.
_STALL_FAMILIES = [
    re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$"),
    re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+?)\.ratio$"),
    re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+)$"),
    re.compile(r"^smsp__warp_issue_stalled_(\w+?)_per_warp_active\.pct$"),
]
# "selected" is the state of a warp that issues: not a stall.
_NOT_STALLS = {"selected"}
_IDENTITY = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context",
             "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name", "Function Name"}


def find_ncu() -> str | None:
    """``KERNELCRAFT_NCU`` if set, else ``ncu`` on PATH, else the CUDA toolkit's copy."""
    env = os.environ.get("KERNELCRAFT_NCU")
    if env:
        return env if shutil.which(env) else None
    found = shutil.which("ncu")
    if found:
        return found
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    return shutil.which(os.path.join(home, "bin", "ncu"))


def collect_command(ncu: str, report_base: str, target: list[str], full: bool = False,
                    with_metrics: bool = True) -> list[str]:
    """``ncu`` collecting the range the target opens with ``cudaProfilerStart``; writes
    ``report_base.ncu-rep``."""
    cmd = [ncu, "--target-processes", "all", "--profile-from-start", "off",
           "--launch-count", str(LAUNCH_COUNT), "--export", report_base, "--force-overwrite"]
    if full:
        cmd += ["--set", "full"]  # holds every section below, and source counters for the GUI
    else:
        for s in SECTIONS:
            cmd += ["--section", s]
    if with_metrics:
        cmd += ["--metrics", ",".join(METRICS)]
    return cmd + target


def import_command(ncu: str, report: str) -> list[str]:
    return [ncu, "--import", report, "--csv", "--page", "raw", "--print-units", "base",
            "--print-kernel-base", "demangled"]


# -- the raw page -----------------------------------------------------------------------------------

@dataclass
class Launch:
    """One profiled kernel launch: a data row of the raw page."""

    kernel: str
    block: str
    grid: str
    metrics: dict[str, float | None]  # by ncu metric name, in canonical units (ns, bytes)


_TIME_NS = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3}


def _scale(unit: str) -> float:
    """Factor to nanoseconds for times and to bytes for sizes; 1 for everything else."""
    base = unit.split("/")[0].strip()
    if base in _TIME_NS:
        return _TIME_NS[base]
    m = re.fullmatch(r"([KMGT]i?|)byte", base)
    return _PREFIX[m.group(1)] if m else 1.0


def _number(text: str) -> float | None:
    s = text.strip().replace(",", "")  # ncu groups thousands with commas
    if not s or s.lower() in {"n/a", "nan", "-"}:
        return None
    try:
        return float(s)
    except ValueError:
        return None


def parse_raw_csv(text: str) -> list[Launch]:
    """``ncu --import R --csv --page raw`` -> one Launch per data row. Lines ncu prints about
    itself (``==PROF==``, ``==WARNING==``) are skipped."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows or "Kernel Name" not in rows[0]:
        raise ValueError("not an ncu raw-page CSV: no header row with 'Kernel Name'")
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    body = rows[1:]
    units = [""] * len(header)
    # the units row leaves every identity column empty; a data row always names its kernel
    if body and len(body[0]) > col["Kernel Name"] and body[0][col["Kernel Name"]].strip() == "":
        units, body = body[0], body[1:]
    launches = []
    for row in body:
        if len(row) < len(header):
            continue
        metrics = {}
        for i, name in enumerate(header):
            if name in _IDENTITY:
                continue
            v = _number(row[i])
            metrics[name] = None if v is None else v * _scale(units[i] if i < len(units) else "")
        ident = {c: row[i] for c, i in col.items() if c in _IDENTITY}
        launches.append(Launch(ident["Kernel Name"], ident.get("Block Size", ""), ident.get("Grid Size", ""), metrics))
    return launches


# -- per kernel -------------------------------------------------------------------------------------

@dataclass
class KernelProfile:
    name: str
    launches: int
    duration_us: float | None  # mean per launch
    total_us: float | None
    time_share: float | None = None  # of all profiled kernel time
    block: str = ""
    grid: str = ""
    values: dict[str, float | None] = field(default_factory=dict)  # the _NAMES quantities, means
    occupancy_limits: dict[str, float] = field(default_factory=dict)  # blocks/SM per resource
    stalls: list[tuple[str, float]] = field(default_factory=list)  # (reason, share), largest first
    bound: str = ""  # memory, compute, latency or unknown
    diagnosis: str = ""

    @property
    def short_name(self) -> str:
        return short_name(self.name)

    @property
    def limiter(self) -> str | None:
        if not self.occupancy_limits:
            return None
        low = min(self.occupancy_limits.values())
        return "+".join(k for k, v in sorted(self.occupancy_limits.items()) if v == low)

    def to_dict(self) -> dict:
        v = self.values
        return {
            "name": self.name, "short_name": self.short_name, "launches": self.launches,
            "duration_us": self.duration_us, "total_us": self.total_us, "time_share": self.time_share,
            "block": self.block, "grid": self.grid,
            "dram_pct": v.get("dram_pct"), "sm_pct": v.get("sm_pct"), "memory_pct": v.get("memory_pct"),
            "achieved_occupancy_pct": v.get("achieved_occupancy_pct"),
            "theoretical_occupancy_pct": v.get("theoretical_occupancy_pct"),
            "occupancy_limiter": self.limiter, "occupancy_limits_blocks_per_sm": self.occupancy_limits,
            "registers_per_thread": v.get("registers_per_thread"),
            "shared_static_bytes": v.get("shared_static_bytes"), "shared_dynamic_bytes": v.get("shared_dynamic_bytes"),
            "local_load_bytes": v.get("local_load_bytes"), "local_store_bytes": v.get("local_store_bytes"),
            "grid_size": v.get("grid_size"), "block_size": v.get("block_size"), "sm_count": v.get("sm_count"),
            "stalls": [{"reason": r, "share": s} for r, s in self.stalls],
            "bound": self.bound, "diagnosis": self.diagnosis,
        }


def _first(metrics: dict[str, float | None], names: list[str]) -> float | None:
    for n in names:
        if metrics.get(n) is not None:
            return metrics[n]
    return None


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return fmean(vals) if vals else None


def _stalls(launches: list[Launch]) -> list[tuple[str, float]]:
    for family in _STALL_FAMILIES:
        per_reason: dict[str, list[float | None]] = {}
        for la in launches:
            for name, v in la.metrics.items():
                m = family.match(name)
                if m and m.group(1) not in _NOT_STALLS and not m.group(1).endswith("not_issued"):
                    per_reason.setdefault(m.group(1), []).append(v)
        means = {r: _mean(vs) or 0.0 for r, vs in per_reason.items()}
        total = sum(means.values())
        if total > 0:
            return sorted(((r, v / total) for r, v in means.items() if v > 0), key=lambda x: -x[1])
    return []


def summarize(launches: list[Launch]) -> list[KernelProfile]:
    """Group launches by kernel name; kernels with the most total time first."""
    groups: dict[str, list[Launch]] = {}
    for la in launches:
        groups.setdefault(la.kernel, []).append(la)
    kernels = []
    for name, ls in groups.items():
        values = {q: _mean([_first(la.metrics, names) for la in ls]) for q, names in _NAMES.items()}
        limits = {}
        for la in ls:
            for n, v in la.metrics.items():
                # blocks per SM each resource allows; 0 would mean the kernel could not launch at
                # all, so a 0 is a limit that does not apply to this launch
                if n.startswith("launch__occupancy_limit_") and v:
                    limits.setdefault(n.removeprefix("launch__occupancy_limit_"), []).append(v)
        dur = values.pop("duration_ns")
        durations = [_first(la.metrics, _NAMES["duration_ns"]) for la in ls]
        total = sum(d for d in durations if d is not None) / 1e3 if any(d is not None for d in durations) else None
        k = KernelProfile(name, len(ls), None if dur is None else dur / 1e3, total, block=ls[0].block,
                          grid=ls[0].grid, values=values, occupancy_limits={r: fmean(v) for r, v in limits.items()},
                          stalls=_stalls(ls))
        k.bound, k.diagnosis = diagnose(k)
        kernels.append(k)
    kernels.sort(key=lambda k: -(k.total_us or 0.0))
    all_time = sum(k.total_us or 0.0 for k in kernels)
    for k in kernels:
        k.time_share = (k.total_us or 0.0) / all_time if all_time else None
    return kernels


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f}%"


def diagnose(k: KernelProfile) -> tuple[str, str]:
    """(bound, one line an agent can act on) from the throughputs as shares of peak."""
    v = k.values
    dram, sm, mem = v.get("dram_pct"), v.get("sm_pct"), v.get("memory_pct")
    if dram is None and sm is None:
        return "unknown", "no throughput metrics in the report"
    mem_any = max(x for x in (dram, mem, 0.0) if x is not None)
    sm0 = sm or 0.0
    stall = f"top stall {k.stalls[0][0]} ({k.stalls[0][1]:.0%})" if k.stalls else ""
    top = f"; {stall}" if stall else ""
    if sm0 >= BOUND_PCT and sm0 >= mem_any:
        return "compute", (f"compute-bound: SM throughput {_pct(sm)} of peak (DRAM {_pct(dram)}); "
                           f"cut instructions: cheaper math, vector loads, fewer index computations, tensor cores{top}")
    if mem_any >= BOUND_PCT:
        if dram is not None and dram >= BOUND_PCT:
            return "memory", (f"memory-bound: DRAM at {_pct(dram)} of peak (SM {_pct(sm)}); near the bandwidth "
                              f"roofline, so only moving fewer bytes helps: fuse, avoid re-reads, narrower types{top}")
        return "memory", (f"memory-bound in the caches: memory units at {_pct(mem)} of peak but DRAM only "
                          f"{_pct(dram)}; look at L1/L2/shared traffic: coalescing, bank conflicts, re-reads{top}")
    hints = []
    ach, theo = v.get("achieved_occupancy_pct"), v.get("theoretical_occupancy_pct")
    grid, sms = v.get("grid_size"), v.get("sm_count")
    if grid is not None and sms and grid < sms:
        hints.append(f"the grid has {grid:.0f} blocks for {sms:.0f} SMs: more parallelism per launch")
    if ach is not None:
        lim = f", limited by {k.limiter}" if k.limiter and theo is not None and theo < 100 else ""
        hints.append(f"achieved occupancy {_pct(ach)} of theoretical {_pct(theo)}{lim}")
    parts = hints + ([stall] if stall else []) or ["hide latency: more independent work per thread, more warps"]
    return "latency", (f"latency-bound: DRAM {_pct(dram)} and SM {_pct(sm)} of peak, neither near its limit; "
                       + "; ".join(parts))
