"""Where a candidate's timing time goes, step by step, with the judge and its runner as a job has them.

    PYTHONPATH=src python scripts/rep_costs.py --device cuda --out /tmp/rep_costs.json
    PYTHONPATH=src python scripts/rep_costs.py --device cpu --rows 1,16 --reps 100   # a smoke run

For rmsnorm (``--solution``, default the tuner's kernel at BLOCK_M 1, 4 warps) at each ``--rows``:

- ``per_rep``: the candidate's turn in the timing rotation (``_RemoteTimer.rep``), split into fresh
  inputs (``make_inputs``), their copy into the arena (``refill``), the round trip of the ``rep``
  request as the judge sees it, the part of it the runner spends in its handler (two flushed calls:
  the no-op and the candidate), the freeze/thaw signals, and the checked calls (``collect`` + the
  reference + the comparison), in ms per repetition (medians of each step, means where a step runs on
  some repetitions only), beside a trusted function's turn in the judge (the baseline's);
- ``arena``: a new arena of each size, the judge's side and the runner's mapping (ms);
- ``time``: ``Judge.time`` of the workload as the gauntlet runs it (budget ``--budget-ms``): wall
  seconds, repetitions, checked calls;
- ``runner_close_s``: ending the runner (its exit, CUDA context included), as every job does inside
  its exclusive hold of the GPU.

Nothing here is a verdict; it reads the same code paths a job runs (the runner's handlers wrapped to
log their duration into its log).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rows", default="1,1024,16384")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--budget-ms", type=float, default=50.0)
    ap.add_argument("--solution", type=Path, default=ROOT / "tasks/rmsnorm/solutions/triton_tunable.py")
    ap.add_argument("--arena-mb", default="0.016,2,64,256,1024")
    ap.add_argument("--close-after-rows", type=int, default=0,
                    help="before ending the runner, check a workload of this many rows (524289: rmsnorm's int32 "
                         "holdout), to see what its caches cost the runner's exit")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if not args.device.startswith("cuda"):
        os.environ["TRITON_INTERPRET"] = "1"
    import kernelcraft.worker.child as child

    child.warm_imports()
    import torch

    import kernelcraft.gauntlet.judge as J
    import kernelcraft.runner.client as rc
    import kernelcraft.runner.main as rm
    from kernelcraft.agent.tuner import with_config
    from kernelcraft.measure.timing import clock_for
    from kernelcraft.runner import protocol
    from kernelcraft.runner.shared import new_arena
    from kernelcraft.solution.model import pack_python_file
    from kernelcraft.task.loader import load_task

    torch.set_grad_enabled(False)
    # The runner's handlers, timed inside the runner (forked from this process after the patch).
    serve = rm.Runner.serve

    def timed_serve(self):
        for name in ("map_arena", "call", "prepare_timing", "rep", "collect"):
            fn = getattr(self, name)

            def wrap(msg, fds, fn=fn, name=name):
                t = time.perf_counter()
                try:
                    return fn(msg, fds)
                finally:
                    print(f"KC_HANDLER {name} {time.perf_counter() - t:.7f}", flush=True)

            setattr(self, name, wrap)
        return serve(self)

    rm.Runner.serve = timed_serve
    task = load_task(ROOT / "tasks/rmsnorm")
    d = task.definition
    text = args.solution.read_text()
    if "BLOCK_M" in text and args.solution.name == "triton_tunable.py":
        text = with_config(text, {"BLOCK_M": 1, "num_warps": 4})
    src = Path(tempfile.mkdtemp()) / "cand.py"
    src.write_text(text)
    sol = pack_python_file(src, d.name)
    # The runner is forked from this process: CUDA must not be initialised here before it is (the H200 run of
    # session 6 died "Cannot re-initialize CUDA in forked subprocess" with set_device above this line).
    client = rc.RunnerClient(args.device)
    client.wait_ready(300)
    if args.device.startswith("cuda"):
        torch.cuda.set_device(0)
    subject = J.RemoteSubject(client, None, sol.spec.destination_passing_style, 300)
    built = subject._ask("build", protocol.BuildReply, timeout=900, solution=sol.to_json_dict(),
                         inputs=list(d.inputs), outputs=list(d.outputs))
    assert built.status == "PASSED", built.reason
    reference = child._import_file(ROOT / "tasks/rmsnorm/baseline.py", "kc_rep_costs_baseline").run
    ref_file = Path(tempfile.mkdtemp()) / "kc_reference.py"
    ref_file.write_text(d.reference)
    ref = child._import_file(ref_file, "kc_rep_costs_reference").run
    judge = J.Judge(task, subject, ref, reference, args.device, 1234)
    subject.judge = judge

    steps: dict[str, list[float]] = defaultdict(list)

    def wrap(name, fn):
        def w(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                steps[name].append(time.perf_counter() - t)
        return w

    J.make_inputs = wrap("make_inputs", J.make_inputs)
    rc.RunnerClient._signal_all = wrap("freeze_thaw_signals", rc.RunnerClient._signal_all)
    J._RemoteTimer._check = wrap("checked_call", J._RemoteTimer._check)
    request = rc.RunnerClient.request

    def req(self, op, *a, **k):
        t = time.perf_counter()
        try:
            return request(self, op, *a, **k)
        finally:
            steps[f"request_{op}"].append(time.perf_counter() - t)

    rc.RunnerClient.request = req
    subject.refill = wrap("refill", subject.refill)

    def handler_times() -> dict[str, list[float]]:
        out = defaultdict(list)
        for line in Path(client.log_path).read_text(errors="replace").splitlines():
            if line.startswith("KC_HANDLER "):
                _, name, s = line.split()
                out[name].append(float(s))
        return out

    result = {"device": args.device, "solution": str(args.solution), "reps": args.reps, "workloads": {}}
    for rows in [int(r) for r in args.rows.split(",")]:
        w = task.workloads[0].model_copy(update={"uuid": f"rep-costs-{rows}", "axes": {"batch_size": rows}})
        axes = d.axis_values(w.axes)
        subject.place(J.make_inputs(task, w, 1234, args.device), axes)
        timer = J._RemoteTimer(judge, subject, w, axes, {"min_reps": args.reps, "budget_ms": args.budget_ms})
        timer.prepare(3)
        steps.clear()
        before = {k: len(v) for k, v in handler_times().items()}
        per_rep = []
        for r in range(args.reps):
            t = time.perf_counter()
            timer.rep(r)
            per_rep.append(time.perf_counter() - t)
        handlers = {k: v[before.get(k, 0):] for k, v in handler_times().items()}
        clock = clock_for(args.device)
        shared = subject.seen()
        local = []
        for r in range(args.reps):
            t = time.perf_counter()
            clock.run("baseline", lambda shared=shared: reference(*shared), r)
            clock.collect()
            local.append(time.perf_counter() - t)
        ms = lambda xs: round(1e3 * statistics.median(xs), 4) if xs else None  # noqa: E731
        mean = lambda xs: round(1e3 * sum(xs) / args.reps, 4) if xs else None  # noqa: E731
        entry = {
            "candidate_turn_ms": {"median": ms(per_rep), "mean": mean(per_rep)},
            "make_inputs_ms": ms(steps["make_inputs"]), "refill_ms": ms(steps["refill"]),
            "rep_round_trip_ms": ms(steps["request_rep"]),
            "runner_rep_handler_ms": ms(handlers.get("rep", [])),
            "freeze_thaw_signals_ms_per_rep": mean(steps["freeze_thaw_signals"]),
            "checked_calls": len(steps["checked_call"]),
            "checked_call_ms": ms(steps["checked_call"]),
            "checked_calls_ms_per_rep": mean(steps["checked_call"]),
            "collect_round_trip_ms": ms(steps["request_collect"]),
            "baseline_turn_ms": ms(local),
        }
        t = time.perf_counter()
        timing = judge.time(w, budget_ms=args.budget_ms)
        entry["time"] = {"wall_s": round(time.perf_counter() - t, 4), "status": timing["status"],
                         "reps": (timing.get("timing") or {}).get("reps"),
                         "checked": (timing.get("timing") or {}).get("checked_reps"),
                         "latency_ms": timing.get("latency_ms"), "reason": timing.get("reason", "")[:300]}
        result["workloads"][rows] = entry
        print(f"rows {rows}: {json.dumps(entry)}", flush=True)
    # arenas: a new one per size, mapped by the runner (the judge's placement without its inputs)
    arenas = {}
    for mb in [float(x) for x in args.arena_mb.split(",")]:
        size = int(mb * (1 << 20))
        made, mapped = [], []
        for _ in range(5):
            t = time.perf_counter()
            a = new_arena(args.device, size)
            made.append(time.perf_counter() - t)
            t = time.perf_counter()
            subject._ask("arena", protocol.EmptyReply, fds=[a.fd], size=a.size, inputs=[], outputs=[], dps=False)
            mapped.append(time.perf_counter() - t)
            judge.sync()
            a.close()
        arenas[mb] = {"judge_new_ms": round(1e3 * statistics.median(made), 3),
                      "runner_map_round_trip_ms": round(1e3 * statistics.median(mapped), 3)}
        print(f"arena {mb} MB: {arenas[mb]}", flush=True)
    result["arena"] = arenas
    if args.close_after_rows:
        w = task.workloads[0].model_copy(update={"uuid": "rep-costs-close", "axes": {"batch_size": args.close_after_rows}})
        t = time.perf_counter()
        checked = judge.check(w, draws=False)
        result["close_after"] = {"rows": args.close_after_rows, "check_s": round(time.perf_counter() - t, 4),
                                 "status": checked["status"]}
        print(f"check of {args.close_after_rows} rows: {result['close_after']}", flush=True)
    subject.close()
    t = time.perf_counter()
    client.close()  # the end of every job: inside its exclusive hold of the GPU
    result["runner_close_s"] = round(time.perf_counter() - t, 4)
    print(f"runner close: {result['runner_close_s']} s", flush=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    else:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
