"""The report's plots, drawn with matplotlib's object API (no pyplot state) and returned as PNG bytes.

Each function returns ``None`` when the data for its plot is not in the records, and the report
says which plot is missing and why.
"""

from __future__ import annotations

import io
import math

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from kernelcraft.report import peers
from kernelcraft.report.data import ReportData

STATUS_COLORS = {"PASSED": "#2e7d32", "SKIPPED": "#f9a825", "PENDING": "#9e9e9e"}
MAX_BARS = 6  # solutions per workload in the bar chart; more are unreadable


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def _axes_label(axes: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in axes.items())


def _plain_log_ticks(ax) -> None:
    """Plain numbers on a log y axis (0.5, 2, not 5x10^-1). Minor ticks are labelled only where
    they fit: every minor tick over less than a decade, 2 and 5 over up to two, none beyond (a CPU
    record spans 0.001x-1x: every minor label at once overlapped)."""
    lo, hi = (v for v in ax.get_ylim())
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 0.0
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))

    def minor(v: float, _) -> str:
        if v <= 0 or decades > 2:
            return ""
        mantissa = round(v / 10 ** math.floor(math.log10(v) + 1e-9), 6)
        return f"{v:g}" if decades < 1 or mantissa in (2.0, 5.0) else ""

    ax.yaxis.set_minor_formatter(FuncFormatter(minor))
    ax.tick_params(axis="y", which="minor", labelsize=7)


def speedup_bars(data: ReportData) -> bytes | None:
    """Per-workload speedup over the baseline, one bar per solution (the best few), log scale."""
    fig = speedup_figure(data)
    return None if fig is None else _png(fig)


def speedup_figure(data: ReportData) -> Figure | None:
    """The kernels (the best few) and, hatched, the trusted rows they are compared with."""
    rows = [r for r in data.rows if peers.role(r.result) != "baseline"
            and any(w.speedup_vs_baseline for w in r.result.workloads)]
    if not rows:
        return None
    kernels = sorted((r for r in rows if not r.is_trusted),
                     key=lambda r: -(r.result.speedup_vs_baseline or 0))[:MAX_BARS]
    rows = kernels + [r for r in rows if r.is_trusted]
    workloads = data.workload_order()
    bars = {id(r): {w.uuid: w.speedup_vs_baseline for w in r.result.workloads} for r in rows}
    fig = _bars(rows, workloads, bars)
    ax = fig.axes[0]
    ax.set_ylabel("speedup over baseline.py (x)")
    ax.set_title(f"{data.task_name}: per-workload speedup (median latency)")
    return fig


def _bars(rows: list, workloads: list, values: dict, xlabels: list[str] | None = None) -> Figure:
    fig = Figure(figsize=(max(6, 1.1 * len(workloads) + 2), 4))
    ax = fig.subplots()
    width = 0.8 / len(rows)
    for i, r in enumerate(rows):
        by = values[id(r)]
        xs = [j + (i - (len(rows) - 1) / 2) * width for j in range(len(workloads))]
        ys = [by.get(u) or 0 for u, _ in workloads]
        ax.bar(xs, ys, width, label=r.label, hatch="//" if r.is_trusted else None)
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_yscale("log")
    _plain_log_ticks(ax)
    ax.set_xticks(range(len(workloads)), xlabels or [_axes_label(a) for _, a in workloads], rotation=30, ha="right",
                  fontsize=8)
    ax.legend(fontsize=7, loc="best")
    return fig


def peer_bars(data: ReportData) -> bytes | None:
    """Per-workload speedup over the best peer (the headline), one bar per kernel; each workload's
    label names the peer that was fastest there."""
    fig = peer_figure(data)
    return None if fig is None else _png(fig)


def peer_figure(data: ReportData) -> Figure | None:
    heads = {id(r): r.headline() for r in data.kernels}
    kernels = sorted((r for r in data.kernels if heads[id(r)].value is not None),
                     key=lambda r: -(heads[id(r)].value or 0))[:MAX_BARS]
    if not kernels:
        return None
    workloads = data.workload_order()
    values = {id(r): {wp.uuid: wp.speedup for wp in heads[id(r)].workloads} for r in kernels}
    best = {}
    for r in kernels:
        for wp in heads[id(r)].workloads:
            if wp.peer:
                best.setdefault(wp.uuid, wp.peer.split(" (")[0])  # the row's name; its library is in the tables
    labels = [f"{_axes_label(a)}\n({best.get(u, peers.NO_PEER)})" for u, a in workloads]
    fig = _bars(kernels, workloads, values, labels)
    ax = fig.axes[0]
    ax.set_ylabel("speedup over the best peer (x)")
    ax.set_title(f"{data.task_name}: per-workload speedup over the fastest trusted row of the run")
    return fig


def roofline(data: ReportData) -> bytes | None:
    """Achieved throughput per workload against the device's calibrated ceilings.

    Memory-bound tasks (no FLOPs in the contract's [roofline]) plot achieved GB/s against the bytes
    moved, with the calibrated copy bandwidth as the ceiling; tasks with FLOPs plot achieved TFLOP/s
    against arithmetic intensity under min(peak, intensity x bandwidth)."""
    if data.task is None:
        return None
    rows = [r for r in data.rows if any(w.latency_ms for w in r.result.workloads)]
    if not rows:
        return None
    cal = data.first.calibration or {}
    points = []  # (label, bytes, flops, latency_ms)
    for r in rows:
        pts = [(data.task.roofline(w.axes), w.latency_ms) for w in r.result.workloads if w.latency_ms]
        points.append((r.label, [(b, f, ms) for (b, f, _), ms in pts]))
    memory_bound = all(f == 0 for _, pts in points for _, f, _ in pts)
    fig = Figure(figsize=(6.5, 4.2))
    ax = fig.subplots()
    for label, pts in points[: MAX_BARS + 2]:
        if memory_bound:
            xs = [b for b, _, _ in pts]
            ys = [b / (ms * 1e-3) / 1e9 for b, _, ms in pts]
        else:
            xs = [f / b for b, f, _ in pts]
            ys = [f / (ms * 1e-3) / 1e12 for _, f, ms in pts]
        ax.plot(xs, ys, marker="o", ls="-", lw=0.8, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    bw = cal.get("copy_gbs")
    if memory_bound:
        ax.set_xlabel("bytes moved per call")
        ax.set_ylabel("achieved bandwidth (GB/s)")
        if bw:
            ax.axhline(bw, color="red", lw=1.2, label=f"calibrated copy {bw:,.0f} GB/s")
    else:
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("achieved TFLOP/s")
        peak = max((cal.get("matmul_tflops") or {}).values(), default=None)
        if bw and peak:
            lo, hi = ax.get_xlim()
            xs = [lo * (hi / lo) ** (i / 50) for i in range(51)]
            ax.plot(xs, [min(peak, x * bw / 1e3) for x in xs], color="red", lw=1.2, label="calibrated roofline")
    if not bw:
        ax.text(0.02, 0.02, "no calibration in the record: no ceiling drawn", transform=ax.transAxes, fontsize=7)
    ax.set_title(f"{data.task_name}: roofline ({data.first.environment.get('hardware', data.first.device)})")
    ax.legend(fontsize=7, loc="best")
    return _png(fig)


def best_so_far(data: ReportData) -> bytes | None:
    """Every candidate of a run in order, its speedup, and the best passing one so far."""
    fig = best_so_far_figure(data)
    return None if fig is None else _png(fig)


def best_so_far_figure(data: ReportData) -> Figure | None:
    if data.run is None:
        return None
    cands = [c for c in data.run["candidates"] if c["agent"] != "baseline"]
    if not cands:
        return None
    fig = Figure(figsize=(6.5, 3.8))
    ax = fig.subplots()
    best, xs, bests = 0.0, [], []
    # x is the candidate's own id (what `ledger show`, review and the DAG call it), not its position
    # among the run's candidates: with the baseline as candidate 1, positions 1-3 were candidates 2-4.
    for c in cands:
        s, x = c["speedup_vs_baseline"], c["id"]
        ok = c["status"] == "PASSED" and s
        if ok:
            best = max(best, s)
        xs.append(x)
        bests.append(best or math.nan)
        color = STATUS_COLORS.get(c["status"], "#c62828")
        ax.scatter([x], [s if ok else 0.0], color=color, marker="o" if ok else "x", zorder=3)
    ax.step(xs, bests, where="post", color="black", lw=1.2, label="best passing so far")
    ax.axhline(1.0, color="gray", lw=0.8, ls="--", label="baseline")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(xs[0] - 0.5, xs[-1] + 0.5)
    ax.set_xlabel("candidate id (proposal order)")
    ax.set_ylabel("speedup over baseline (x)")
    ax.set_title(f"run {data.run['run_id']}: best so far (x = failed, at 0)")
    ax.legend(fontsize=7)
    return fig


def dag(data: ReportData) -> bytes | None:
    """The candidate DAG: depth left to right, colored by status, the promoted one ringed."""
    if data.run is None:
        return None
    cands = data.run["candidates"]
    ids = {c["id"] for c in cands}
    children: dict = {}
    for c in cands:
        parent = c["parent"] if c["parent"] in ids else None
        children.setdefault(parent, []).append(c)
    pos: dict[int, tuple[float, float]] = {}
    row = [0]

    def place(parent, depth):
        for c in children.get(parent, []):
            pos[c["id"]] = (depth, -row[0])
            row[0] += 1
            place(c["id"], depth + 1)

    place(None, 0)
    fig = Figure(figsize=(max(5, 1.6 * (max(x for x, _ in pos.values()) + 2)), max(2.5, 0.45 * len(pos) + 1)))
    ax = fig.subplots()
    for c in cands:
        if c["parent"] in pos and c["id"] in pos:
            (x0, y0), (x1, y1) = pos[c["parent"]], pos[c["id"]]
            ax.plot([x0, x1], [y0, y1], color="#999", lw=0.8, zorder=1)
    for c in cands:
        if c["id"] not in pos:
            continue
        x, y = pos[c["id"]]
        promoted = c["id"] == data.run.get("promoted")
        ax.scatter([x], [y], s=160 if promoted else 70, color=STATUS_COLORS.get(c["status"], "#c62828"),
                   edgecolors="black" if promoted else "none", linewidths=2, zorder=2)
        sp = f" {c['speedup_vs_baseline']:.2f}x" if c["speedup_vs_baseline"] else ""
        ax.annotate(f"{c['id']} {c['status'].lower()}{sp}" + (" (promoted)" if promoted else ""), (x, y), fontsize=7,
                    xytext=(8, -3), textcoords="offset points")
    ax.set_axis_off()
    ax.set_xlim(-0.5, max(x for x, _ in pos.values()) + 1.5)
    ax.set_title(f"run {data.run['run_id']}: candidate DAG (green passed, red failed)")
    return _png(fig)


PLOTS = {
    "peer": (peer_bars, "Per-workload speedup over the best peer",
             f"{peers.NO_PEER} in these records (only the baseline, or the old harness's dynamic torch.compile)"),
    "speedup": (speedup_bars, "Per-workload speedup over the baseline",
                "no solution of these records was timed against the baseline"),
    "roofline": (roofline, "Roofline", "needs the task folder (bytes per call) and timed workloads"),
    "best_so_far": (best_so_far, "Best so far across the run's candidates",
                    "a single evaluation record has no run history: report a ledger run (--run ID) for this plot"),
    "dag": (dag, "Candidate DAG", "a single evaluation record has no DAG: report a ledger run (--run ID) for this plot"),
}
