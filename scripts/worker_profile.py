"""Where a worker's CPU time goes (issue 11: the pool's host-CPU cost per candidate).

Runs, in this one process: the worker's imports step by step, then N candidate jobs of the scale
benchmark's batch through the worker's own job loop (``kernelcraft.worker.child._run``) with a
stand-in pipe, each under cProfile. Prints wall and CPU seconds (this process and its reaped
children, e.g. ptxas) per import step and per phase, and the functions with the most cumulative
time; writes the same as JSON and the pstats dumps to --out.

    python3 scripts/worker_profile.py --device cuda --candidates 3 --out /tmp/prof

Not the isolation the pool gives (one process per job): the first job pays the CUDA context, the
later ones show a warm process's cost, which is what a worker forked from a warm template pays.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def cpu_s() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class Clock:
    def __init__(self) -> None:
        self.t, self.c = time.monotonic(), cpu_s()

    def lap(self) -> tuple[float, float]:
        t, c = time.monotonic(), cpu_s()
        out = (round(t - self.t, 3), round(c - self.c, 3))
        self.t, self.c = t, c
        return out


class StandInPipe:
    """The parent's side as the worker sees it: records each phase's wall and CPU time, answers go."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.phase = "start"
        self.phases: dict[str, list[float]] = {}
        self.messages: list[tuple] = []

    def _close_phase(self) -> None:
        wall, cpu = self.clock.lap()
        acc = self.phases.setdefault(self.phase, [0.0, 0.0])
        acc[0] += wall
        acc[1] += cpu

    def send_bytes(self, raw: bytes) -> None:
        """The worker's messages are JSON (kernelcraft.worker.child.send)."""
        from kernelcraft.worker.pool import decode

        self.send(decode(raw))

    def send(self, msg: tuple) -> None:
        self.messages.append(msg)
        if msg[0] == "phase":
            self._close_phase()
            self.phase = msg[1]
        elif msg[0] == "ready":
            self._close_phase()  # the build ends at the first request; timing waits are not work
            self.phase = "checks" if len(msg) == 1 else "timing-wait"

    def recv(self) -> tuple:
        return ("go",)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--candidates", type=int, default=3)
    ap.add_argument("--task", type=Path, default=ROOT / "tasks/silu_mul")
    ap.add_argument("--budget-ms", type=float, default=10.0)
    ap.add_argument("--top", type=int, default=45)
    ap.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="kc_prof_")))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.device.startswith("cuda"):
        import os

        os.environ["TRITON_INTERPRET"] = "1"
    record: dict = {"device": args.device, "imports": {}, "jobs": []}
    clock = Clock()
    import torch

    record["imports"]["torch"] = clock.lap()
    import kernelcraft.gauntlet.judge  # noqa: F401
    import kernelcraft.solution.build  # noqa: F401
    import kernelcraft.task.loader  # noqa: F401

    record["imports"]["kernelcraft"] = clock.lap()
    from kernelcraft.runner.checks import prime_dispatch_modes

    prime_dispatch_modes()
    record["imports"]["prime_dispatch_modes (torch._dynamo)"] = clock.lap()
    import triton  # noqa: F401

    record["imports"]["triton"] = clock.lap()
    if args.device.startswith("cuda"):
        torch.cuda.init()
        torch.empty(1, device=args.device)
        record["imports"]["cuda context"] = clock.lap()
    record["torch_threads"] = torch.get_num_threads()
    for k, v in record["imports"].items():
        print(f"import {k:40s} wall {v[0]:7.3f} s  cpu {v[1]:7.3f} s", flush=True)

    from scale import batch

    from kernelcraft.gauntlet import Options
    from kernelcraft.gauntlet.evaluate import prepare
    from kernelcraft.task.loader import load_task
    from kernelcraft.worker import child

    task = load_task(args.task)
    opts = Options(device=args.device, timing={"budget_ms": args.budget_ms}, cpu_max_mb=16.0)
    d = Path(tempfile.mkdtemp(prefix="kc_prof_batch_"))
    for i, (role, sol, path) in enumerate(batch(task, args.task / "solutions/triton_tunable.py", args.candidates, d)):
        prep = prepare(task, role, sol, path, 1234 + i, opts)
        job = prep.job
        job.gpu_slot = True
        pipe = StandInPipe()
        prof = cProfile.Profile()
        prof.enable()
        child._run(pipe, job)
        prof.disable()
        pipe._close_phase()
        prof.dump_stats(str(args.out / f"job{i}.pstats"))
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(args.top)
        (args.out / f"job{i}_cumulative.txt").write_text(s.getvalue())
        s2 = io.StringIO()
        pstats.Stats(prof, stream=s2).sort_stats("tottime").print_stats(args.top)
        (args.out / f"job{i}_tottime.txt").write_text(s2.getvalue())
        statuses = sorted({f"build {m[1]}" if m[0] == "build" else f"{m[1]} {m[3].get('status')}"
                           for m in pipe.messages if m[0] in ("build", "workload")})
        record["jobs"].append({"solution": sol.name, "phases_wall_cpu_s": {k: [round(x, 3) for x in v] for k, v in pipe.phases.items()},
                               "statuses": statuses})
        total = [sum(v[0] for v in pipe.phases.values()), sum(v[1] for v in pipe.phases.values())]
        print(f"job {i} {sol.name}: total wall {total[0]:.2f} s cpu {total[1]:.2f} s; "
              + "; ".join(f"{k} {v[0]:.2f}/{v[1]:.2f}" for k, v in pipe.phases.items()) + f" ({statuses})", flush=True)
        print("\n".join(s.getvalue().splitlines()[:args.top + 12]), flush=True)
    (args.out / "worker_profile.json").write_text(json.dumps(record, indent=1) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
