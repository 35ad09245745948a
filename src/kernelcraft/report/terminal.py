"""``eval``'s tables in the terminal: the verdicts, then the median latencies per workload.

Readable at a glance (issue 24): one column per solution, headed by a name that tells the solutions
apart (the task's definition name, which most catalog solutions start with, is cut off, and long
names fold instead of being cut to the same prefix); the baseline once (its own row, or when it was
not evaluated itself, the baseline timed beside the candidates); CPU figures labelled as what they are.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelcraft.gauntlet.records import EvalReport
from kernelcraft.measure.cpu import NOTE
from kernelcraft.measure.stability import cut_short


def fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def speed(x: float | None) -> str:
    """A speedup: two decimals, or two significant digits below 0.01 (the interpreter's 0.0021x,
    which two decimals showed as 0.00x)."""
    if x is None:
        return "-"
    return f"{x:.2f}" if x >= 0.01 else f"{x:.2g}"


def headers(names: list[str], definition: str) -> list[str]:
    """Column headers: each name without the definition's name in front, unless that would make two equal."""
    prefix = definition + "_"
    short = [n[len(prefix):] if n.startswith(prefix) and len(n) > len(prefix) else n for n in names]
    return short if len(set(short)) == len(set(names)) else list(names)


def print_report(console: Console, report: EvalReport) -> None:
    cpu = not report.device.startswith("cuda")
    timed = any(w.latency_ms for s in report.solutions for w in s.workloads)
    caption = None
    if cpu:
        caption = NOTE if timed else "correctness only (on a CPU, timing runs with --time)"
    t = Table(title=f"{report.task} on {report.environment['hardware']} (seed {report.seed})", caption=caption)
    speed_cols = ("x baseline (cpu)", "x reference (cpu)") if cpu else ("x baseline", "x reference")
    # the headline first: against the fastest trusted row of this run (baseline, torch.compile, peers)
    best_col = "x best peer (cpu)" if cpu else "x best peer"
    for col in ("solution", "status", "gate", best_col, *speed_cols, "workloads"):
        t.add_column(col, overflow="fold")
    colors = {"PASSED": "green", "SKIPPED": "yellow"}
    for s in report.solutions:
        ok = sum(w.status == "PASSED" for w in s.workloads)
        best = speed(s.speedup_vs_best_peer)
        if s.best_peers:
            best += f" ({escape(', '.join(s.best_peers))})"
        if s.unsettled_workloads:
            best += f" [{s.unsettled_workloads} unsettled: bimodal, within placement noise or the run's asymmetry, or cut short]"
        t.add_row(escape(s.name), f"[{colors.get(s.status, 'red')}]{s.status}[/]", s.gate or "", best,
                  speed(s.speedup_vs_baseline), speed(s.speedup_vs_reference), f"{ok}/{len(s.workloads)}")
    console.print(t)
    if timed and report.solutions:
        console.print(latency_table(report))
        _timing_processes(console, report)
        _cut_short(console, report)
    for s in report.solutions:
        if s.reason:
            console.print(f"[bold]{escape(s.name)}[/]: {s.status}" + (f" ({s.gate})" if s.gate else ""), highlight=False)
            console.print("  " + s.reason.replace("\n", "\n  "), markup=False, highlight=False)
        if s.sanitize and s.status == "PASSED":
            tools = ", ".join(f"{t['tool']} {t['errors']} ({t['seconds']:.0f} s)" for t in s.sanitize["tools"])
            console.print(f"{s.name}: compute-sanitizer errors: {tools}; shapes {s.sanitize['workloads']}",
                          markup=False, highlight=False)
        lint = s.static_lint or {}
        if lint.get("races") and "pipeline race" not in (s.reason or ""):
            console.print(f"{s.name}: pipeline race (Triton {lint.get('triton')}, {lint.get('target')}): "
                          + "; ".join(lint["races"]) + ": results can change from call to call on the GPU; run that "
                          "loop with tl.range(..., num_stages=1)", markup=False, highlight=False)
        elif lint.get("error"):
            console.print(f"{s.name}: static lint: {lint['error']}", markup=False, highlight=False)


def _cut_short(console: Console, report: EvalReport) -> None:
    """How many timed rows ended on their wall bound before their median converged (``timing.stop`` "wall"), and
    with how few samples: where that is most rows, the comparison rests on a handful of samples (kc-timing/7's
    gdn_prefill records: 5 per row) and a larger ``--budget-ms`` is the remedy."""
    rows = [(s.name, w.timing) for s in report.solutions for w in s.workloads
            if w.timing and w.timing.get("stop") not in (None, "", "brief")]
    cut = [(n, t) for n, t in rows if cut_short(t)]
    if not cut:
        return
    fewest = min(t.get("reps") or 0 for _, t in cut)
    console.print(f"timing: {len(cut)} of {len(rows)} timed rows stopped on their wall bound before converging "
                  f"(fewest samples {fewest}); where their intervals overlap the comparison is unsettled; a larger "
                  "--budget-ms narrows them", markup=False, highlight=False)


def _timing_processes(console: Console, report: EvalReport) -> None:
    """Where the trusted rows' calls were timed (``--trusted-timing``): by the judge, or in runners of their own as
    the candidates' are; and why a row asked for a runner was timed by the judge."""
    where: dict[str, list[str]] = {}
    for s in report.solutions:
        if s.role != "candidate" and s.timing_process:
            where.setdefault(s.timing_process, []).append(s.name)
    if not where:
        return
    parts = [f"{'in runners of their own' if k == 'runner' else 'by the judge'}: {', '.join(v)}" for k, v in where.items()]
    console.print("trusted rows timed " + "; ".join(parts) + " (candidates: in their runners)", markup=False,
                  highlight=False)
    for s in report.solutions:
        if s.role != "candidate" and s.timing_process_reason:
            console.print(f"  {s.name}: {s.timing_process_reason[:400]}", markup=False, highlight=False)


def latency_table(report: EvalReport) -> Table:
    cpu = not report.device.startswith("cuda")
    method = "cpu-wall: Triton interpreter, not a GPU figure" if cpu else "cuda events, L2 flushed"
    lat = Table(title=f"median latency, ms ({method})")
    lat.add_column("workload", overflow="fold")
    sols = report.solutions
    for h in headers([s.name for s in sols], report.task):
        lat.add_column(escape(h), justify="right", overflow="fold")
    # The baseline as timed beside each candidate: only when the baseline was not evaluated itself,
    # else it would be the same solution twice.
    beside = not any(s.name == "baseline" for s in sols)
    if beside:
        lat.add_column("baseline.py", justify="right", overflow="fold")
    lat.add_column("reference", justify="right", overflow="fold")
    first = sols[0].workloads
    for i, w0 in enumerate(first):
        row = [f"{w0.uuid[:8]} " + ", ".join(f"{k}={v}" for k, v in w0.axes.items())]
        base = ref = None
        for s in sols:
            w = s.workloads[i]
            cell = fmt(w.latency_ms, ".4f") if w.status == "PASSED" else w.status.lower()
            if w.sol is not None and w.status == "PASSED":
                cell += f" ({w.sol:.0%} sol)" if w.sol >= 0.1 else f" ({w.sol:.2%} sol)"
            row.append(cell)
            base = base or w.baseline_latency_ms
            ref = ref or w.reference_latency_ms
        row += ([fmt(base, ".4f")] if beside else []) + [fmt(ref, ".4f")]
        lat.add_row(*row)
    return lat
