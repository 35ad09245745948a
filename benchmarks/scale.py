"""Benchmark of the pool (issue 11): candidates per minute against the number of workers. Prints the
figures and writes them, with the environment and provenance, to a JSON file.

    python benchmarks/scale.py --device cuda --workers 1,2 --out results/h200x2/scale.json   # 2 GPUs
    python benchmarks/scale.py --device cpu --workers 1,2 --candidates 4 --cpu-max-mb 0.2 --out /tmp/scale_cpu.json

The batch: the first N configurations of ``TUNABLES`` of a catalog solution (default
tasks/silu_mul/solutions/triton_tunable.py), every gate and timing included, evaluated by the local
pool with 1, 2, ... workers (GPUs with ``--device cuda``, CPU workers with ``--device cpu``). Each
count starts from the same state: new worker processes, started and warm before the clock starts
(a design loop's pool after its first round; ``--cold-pool`` counts that start-up too) and the
device calibrated, and empty Triton and kernelcraft build caches, so no count profits from another's
compilations. The pool's template (the process workers are forked from) is started once, by the
first count's pool start. Target (issue 11): 2 GPUs >= 1.8x 1 GPU.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

TARGET_2X = 1.8


def batch(task, solution: Path, n: int, dest: Path, order: str = "given", seed: int = 0) -> list:
    """The first ``n`` configurations of the solution's TUNABLES, in the tuner's product order
    (``given``: the largest tiles, slowest to compile and check, come last) or shuffled with ``seed``."""
    import random

    from kernelcraft.agent.tuner import tunables_of, with_config
    from kernelcraft.solution.model import pack_python_file

    text = solution.read_text()
    space, start = tunables_of(text)
    configs = [start] + [dict(zip(space, combo, strict=True)) for combo in itertools.product(*space.values())]
    seen, entries = set(), []
    for cfg in configs:
        key = tuple(sorted({**start, **cfg}.items()))
        if key in seen:
            continue
        seen.add(key)
        f = dest / f"cand_{len(entries)}.py"
        f.write_text(with_config(text, {**start, **cfg}))
        tag = ",".join(f"{k}={v}" for k, v in key)
        entries.append(("candidate", pack_python_file(f, task.definition.name, name=f"{solution.stem}[{tag}]"), str(f)))
        if len(entries) == n:
            break
    if order == "shuffled":
        random.Random(seed).shuffle(entries)
    return entries


def _end(o) -> float:
    """When a job left its lane: its timing hold ended with its process; else its done (or start)."""
    return o.slot_held[1] if o.slot_held else (o.done_at or o.taken_at)


def throughput_while_queued(outcomes: list, t0: float) -> dict:
    """Candidates per minute while work was still queued: from the first completion to the moment
    the last candidate was taken by a lane, over the completions in between. A batch's wall time
    adds a drain after that (lanes finishing their last jobs while others idle), whose length is
    set by the last candidates' cost, not by the pool."""
    if len(outcomes) < 2:
        return {}
    ends = sorted(_end(o) - t0 for _, o in outcomes)
    last_taken = max(o.taken_at for _, o in outcomes) - t0
    done_by = [e for e in ends if e <= last_taken]
    out = {"last_taken_s": round(last_taken, 2), "first_done_s": round(ends[0], 2),
           "done_while_queued": len(done_by), "drain_s": round(ends[-1] - last_taken, 2)}
    if len(done_by) >= 2 and done_by[-1] > done_by[0]:
        out["candidates_per_minute"] = round((len(done_by) - 1) / (done_by[-1] - done_by[0]) * 60, 2)
    return out


def host_cpu_s() -> dict[str, float] | None:
    """CPU-seconds the whole host has spent since boot (/proc/stat), by kind: ``user`` (user, nice),
    ``system`` (system, irq, softirq: page faults of forked workers land here), ``steal`` (taken by
    the hypervisor: a virtual machine's neighbours) and ``busy`` (all three); None off Linux. Worker
    processes are forked by the pool's template, not by this process, so this process's
    RUSAGE_CHILDREN no longer sees them."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    tick = os.sysconf("SC_CLK_TCK")
    out = {"user": (user + nice) / tick, "system": (system + irq + softirq) / tick, "steal": steal / tick}
    out["busy"] = out["user"] + out["system"] + out["steal"]
    return out


def gpu_timeline(outcomes: list, t0: float, wall: float) -> dict:
    """Per lane, from the pool's own clock: how much of the batch's wall time the GPU was held for
    timing and for checks, how much nobody held it, and how long a worker took to exit after its
    "done" (the timing hold lasts until then)."""
    lanes: dict[str, dict] = {}
    for label, o in outcomes:
        lane = lanes.setdefault(label, {"timing_held_s": 0.0, "checks_held_s": 0.0, "jobs": 0, "exit_s": [],
                                        "shared": [], "first_taken_s": None, "last_done_s": 0.0})
        lane["jobs"] += 1
        if o.slot_held:
            lane["timing_held_s"] += o.slot_held[1] - o.slot_held[0]
            if o.done_at is not None:
                lane["exit_s"].append(max(0.0, o.slot_held[1] - o.done_at))
        lane["shared"].extend(o.slot_shared)
        lane["checks_held_s"] += sum(b - a for a, b in o.slot_shared)
        taken = o.taken_at - t0
        lane["first_taken_s"] = taken if lane["first_taken_s"] is None else min(lane["first_taken_s"], taken)
        lane["last_done_s"] = max(lane["last_done_s"], _end(o) - t0)
    for lane in lanes.values():
        # the time some check held the slot (the union of the shared holds), and the time nobody
        # held it at all: every job of the lane building, starting, or between two workloads
        union, end = 0.0, float("-inf")
        for a, b in sorted(lane.pop("shared")):
            if b > end:
                union += b - max(a, end)
                end = b
        lane["checks_union_s"] = round(union, 2)
        lane["unheld_s"] = round(max(0.0, (lane["last_done_s"] - lane["first_taken_s"]) - union - lane["timing_held_s"]), 2)
        exits = lane.pop("exit_s")
        lane["mean_exit_after_done_s"] = round(sum(exits) / len(exits), 3) if exits else None
        lane["timing_share_of_wall"] = round(lane["timing_held_s"] / wall, 3)
        for k in ("timing_held_s", "checks_held_s", "first_taken_s", "last_done_s"):
            lane[k] = round(lane[k], 2)
    return lanes


def run_count(task, entries, device: str, workers: int, budget_ms: float, cpu_max_mb: float,
              warm: bool = True, depth: int | None = None) -> dict:
    from kernelcraft.gauntlet import Options, evaluate
    from kernelcraft.worker.executor import GPU_DEPTH, Done, LocalExecutor, cpu_lanes, gpu_lanes
    from kernelcraft.worker.pool import shutdown_spares

    class Recording(LocalExecutor):
        """The local pool, keeping each finished job's event (lane, slot holds, times) for the timeline."""

        def __init__(self, lanes):
            super().__init__(lanes)
            self.done: list[Done] = []

        def next_event(self):
            ev = super().next_event()
            if isinstance(ev, Done):
                self.done.append(ev)
            return ev

    shutdown_spares()
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="kc_scale_triton_")  # cold for every count
    os.environ["KERNELCRAFT_CACHE"] = tempfile.mkdtemp(prefix="kc_scale_cache_")
    lanes = cpu_lanes(workers) if device == "cpu" else gpu_lanes("cuda", list(range(workers)), depth=depth or GPU_DEPTH)
    opts = Options(device=device, timing={"budget_ms": budget_ms}, cpu_max_mb=cpu_max_mb)
    # The device's calibration (speed of light; cached per machine, so a design loop measures it
    # once) is taken before the clock too: with the empty cache it took a subprocess start and a
    # bandwidth and matmul measurement inside every count's wall time, before any job started.
    from kernelcraft.measure.calibrate import cached, calibrate_in_subprocess

    c0 = time.monotonic()
    if cached(device) is None:
        calibrate_in_subprocess(device)
    calibration_s = time.monotonic() - c0
    with Recording(lanes) as ex:
        # The pool as a design loop has it after its first round: every lane's spares started and
        # warm (imports done), so the figure is the steady state, not the one-off start-up, which
        # is recorded beside it.
        start_s = ex.prestart() if warm else 0.0
        ru0, busy0, load0 = resource.getrusage(resource.RUSAGE_SELF), host_cpu_s(), os.getloadavg()[0]
        t0 = time.monotonic()
        report = evaluate(task, entries, opts, executor=ex)
        wall = time.monotonic() - t0
        ru1, busy1, load1 = resource.getrusage(resource.RUSAGE_SELF), host_cpu_s(), os.getloadavg()[0]
    outcomes = [(ev.worker, ev.outcome) for ev in ex.done]
    timeline = gpu_timeline(outcomes, t0, wall)
    queued = throughput_while_queued(outcomes, t0)
    jobs = [{"candidate": ev.key, "lane": ev.worker, "taken_s": round(ev.outcome.taken_at - t0, 2),
             "end_s": round(_end(ev.outcome) - t0, 2),
             "timing_held_s": None if not ev.outcome.slot_held else [round(x - t0, 2) for x in ev.outcome.slot_held],
             "checks_held_s": round(sum(b - a for a, b in ev.outcome.slot_shared), 3),
             "shared_holds": len(ev.outcome.slot_shared),
             "phases_s": {k: round(v, 3) for k, v in ev.outcome.phases_s.items()},
             "phases_cpu_s": {k: round(v, 3) for k, v in ev.outcome.phases_cpu_s.items()}}
            for ev in ex.done]
    # where the host's CPU went: this (recording) process; the workers, as each reported its own
    # (and its compilers') CPU seconds; the whole host, from /proc/stat (spares started for jobs
    # that never came, the template, everything else running)
    worker_cpu = [s.worker_cpu_s for s in report.solutions if s.worker_cpu_s is not None]
    split = None if busy0 is None or busy1 is None else {k: round(busy1[k] - busy0[k], 1) for k in busy0}
    busy = None if split is None else split.pop("busy")
    host = {"parent_cpu_s": round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 2),
            "workers_cpu_s": round(sum(worker_cpu), 2),
            "worker_cpu_s_per_candidate": round(sum(worker_cpu) / len(worker_cpu), 2) if worker_cpu else None,
            "host_busy_cpu_s": None if busy is None else round(busy, 1),
            "host_busy_cores_mean": None if busy is None else round(busy / wall, 2),
            "host_cpu_s_by_kind": split,
            "loadavg_1min_before_after": [round(load0, 2), round(load1, 2)], "cpu_count": os.cpu_count()}
    shutdown_spares()
    per_worker: dict[str, int] = {}
    for s in report.solutions:
        per_worker[s.worker] = per_worker.get(s.worker, 0) + 1
    statuses: dict[str, int] = {}
    for s in report.solutions:
        statuses[s.status] = statuses.get(s.status, 0) + 1
    out = {"workers": workers, "worker_labels": [lane.label for lane in lanes], "jobs_per_worker": lanes[0].depth,
           "candidates": len(entries), "wall_s": wall, "candidates_per_minute": len(entries) / wall * 60,
           "per_worker": per_worker, "statuses": statuses,
           "solution_wall_s": [round(s.wall_s, 3) for s in report.solutions],
           "speedups_vs_baseline": [s.speedup_vs_baseline for s in report.solutions],
           "pool_warm": warm, "pool_start_s": round(start_s, 3), "calibration_s": round(calibration_s, 2), "host": host,
           # mean worker seconds per phase ("start": taking the worker until the build began)
           "mean_phases_s": {k: round(sum(s.phases_s.get(k, 0.0) for s in report.solutions) / len(report.solutions), 3)
                             for k in sorted({k for s in report.solutions for k in s.phases_s})},
           # mean worker CPU seconds per phase, as the workers reported them
           "mean_phases_cpu_s": {k: round(sum(s.phases_cpu_s.get(k, 0.0) for s in report.solutions) / len(report.solutions), 3)
                                 for k in sorted({k for s in report.solutions for k in s.phases_cpu_s})},
           "worker_start": template_note(), "lanes": timeline, "while_queued": queued, "jobs": jobs}
    print(f"{workers} worker(s) {out['worker_labels']}: {len(entries)} candidates in {wall:.1f} s = "
          f"{out['candidates_per_minute']:.1f} per minute (pool start {start_s:.1f} s before, not counted); {statuses}; "
          f"per worker {per_worker}; mean phases {out['mean_phases_s']}; cpu {out['mean_phases_cpu_s']}; host {host}; "
          f"lanes {timeline}; while queued {queued}", flush=True)
    return out


def template_note() -> str:
    from kernelcraft.worker import template

    if not template.enabled():
        return "spawned: each worker process imports torch, triton and the gauntlet itself"
    return "forked from the pool's template (torch, triton and the gauntlet imported once)"


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--workers", default="1,2", help="worker counts to measure, e.g. 1,2 (GPUs or CPU workers)")
    ap.add_argument("--task", type=Path, default=ROOT / "tasks/silu_mul")
    ap.add_argument("--solution", type=Path, default=None, help="a solution with TUNABLES (default: "
                    "the task's solutions/triton_tunable.py)")
    ap.add_argument("--candidates", type=int, default=24, help="batch size; with 12 on 2 x H200 the cold first candidates were a large share (results/h200x2/README.md)")
    ap.add_argument("--budget-ms", type=float, default=10.0, help="timing budget per function per workload")
    ap.add_argument("--cpu-max-mb", type=float, default=16.0, help="on cpu, skip workloads moving more than this")
    ap.add_argument("--cold-pool", action="store_true", help="count the pool's start-up (worker imports) in the "
                    "wall time instead of starting its spares before the clock")
    ap.add_argument("--order", choices=["given", "shuffled"], default="given", help="the batch in the tuner's "
                    "product order (largest tiles last) or shuffled with --seed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs-per-gpu", type=int, default=None, help="jobs at once per GPU lane (default: "
                    "kernelcraft.worker.executor.GPU_DEPTH)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    from kernelcraft.measure.environment import environment
    from kernelcraft.task.loader import load_task

    task = load_task(args.task)
    solution = args.solution or args.task / "solutions/triton_tunable.py"
    counts = [int(x) for x in args.workers.split(",")]
    result = {"environment": environment(args.device),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "command": " ".join([Path(sys.executable).name, *sys.argv]),
              # git_commit is the checkout's HEAD where one exists; the device machine gets a copy of the
              # working tree whose .git may lag: environment.harness_source_sha256 names the code run
              "provenance": {"git_commit": _git("rev-parse", "HEAD"), "git_dirty": bool(_git("status", "--porcelain")),
                             "python": platform.python_version(), "cpu_count": os.cpu_count()},
              "task": task.definition.name, "solution": str(solution), "device": args.device,
              "budget_ms": args.budget_ms, "order": args.order, "seed": args.seed, "runs": []}
    if args.device == "cuda":
        from kernelcraft.worker.executor import visible_gpus

        result["visible_gpus"] = visible_gpus()
    with tempfile.TemporaryDirectory() as d:
        entries = batch(task, solution, args.candidates, Path(d), args.order, args.seed)
        for w in counts:
            result["runs"].append(run_count(task, entries, args.device, w, args.budget_ms, args.cpu_max_mb,
                                            warm=not args.cold_pool, depth=args.jobs_per_gpu))
    base = next((r for r in result["runs"] if r["workers"] == 1), None)
    if base:
        result["speedup_vs_1_worker"] = {str(r["workers"]): r["candidates_per_minute"] / base["candidates_per_minute"]
                                         for r in result["runs"]}
        if base["while_queued"].get("candidates_per_minute"):
            result["speedup_while_queued_vs_1_worker"] = {
                str(r["workers"]): r["while_queued"]["candidates_per_minute"] / base["while_queued"]["candidates_per_minute"]
                for r in result["runs"] if r["while_queued"].get("candidates_per_minute")}
            print("while work was queued: " + ", ".join(f"{w} worker(s) {x:.2f}x"
                                                        for w, x in result["speedup_while_queued_vs_1_worker"].items()))
        for w, x in result["speedup_vs_1_worker"].items():
            note = f" (target >= {TARGET_2X}x: {'met' if x >= TARGET_2X else 'missed'})" if w == "2" else ""
            print(f"throughput with {w} worker(s): {x:.2f}x of 1{note}")
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
        print(f"wrote {args.out}")
    else:
        print(text)


if __name__ == "__main__":
    main()
