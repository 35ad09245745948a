"""Feedback an agent can act on, from one evaluated solution: the verdict, where it failed and by
how much (the gauntlet's own reason text carries the workload, the element and the values), and
per-workload timings against the baseline."""

from __future__ import annotations

from kernelcraft.gauntlet.records import SolutionResult


def feedback_text(res: SolutionResult, limit: int = 6000) -> str:
    lines = [f"status: {res.status}" + (f" (gate: {res.gate})" if res.gate else "")]
    if res.reason:
        lines.append("reason:\n" + res.reason)
    timed = [w for w in res.workloads if w.latency_ms is not None]
    if res.speedup_vs_best_peer:
        # first what decides adoption: the fastest thing a user could run instead, measured in this run
        lines.append(f"geometric-mean speedup vs the best peer: {res.speedup_vs_best_peer:.3f}x "
                     f"(best peers: {', '.join(res.best_peers)})")
        for w in timed:
            if w.speedup_vs_best_peer:
                axes = ", ".join(f"{k}={v}" for k, v in w.axes.items())
                lines.append(f"  {axes}: {w.latency_ms:.4f} ms vs {w.best_peer} {w.best_peer_latency_ms:.4f} ms "
                             f"({w.speedup_vs_best_peer:.2f}x)" + (f" UNSETTLED: {w.unsettled}" if w.unsettled else ""))
        if res.unsettled_workloads:
            lines.append(f"  ({res.unsettled_workloads} comparison(s) unsettled: bimodal timing samples or a gap "
                         "inside the placement noise; do not tune toward those figures, the next run may read them the "
                         "other way)")
    if timed:
        lines.append("timings (ms, candidate vs baseline):")
        for w in timed:
            axes = ", ".join(f"{k}={v}" for k, v in w.axes.items())
            sp = f"{w.speedup_vs_baseline:.2f}x" if w.speedup_vs_baseline else "-"
            lines.append(f"  {axes}: {w.latency_ms:.4f} vs {w.baseline_latency_ms or 0:.4f} ({sp})")
    if res.speedup_vs_baseline:
        lines.append(f"geometric-mean speedup vs baseline: {res.speedup_vs_baseline:.3f}x")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit] + "\n... (truncated)"
