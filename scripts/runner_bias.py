"""Diagnostic (GPU): is the same kernel slower when timed in a second process on CUDA-IPC inputs, the way
`kernelcraft eval` times every candidate (the sandboxed runner) while peers and torch.compile are timed in the
judge's own process? Session 19's A/A rows (scripts/h200_s19_aa.sh) had the promoted rmsnorm 0.26-0.48 us slower
at 1-128 rows as a candidate than as a peer, and 1.1-1.4 us at 4096-16384 rows; Liger's code the same way round.

One kernel (the task's solution ``run``), timed with the harness's own clock (measure/timing.py: graph replay,
L2 flushed by a read, CUDA events) in these arrangements, per batch size:

- ``judge``: the parent times it on its own tensors (what a peer row is);
- ``child-ipc``: a child process times it on the parent's tensors opened through CUDA IPC (a candidate row);
- ``child-local``: the child times it on its own copies of them (no IPC memory);
and in two modes: ``quiet`` (the parent only waits between the child's turns) and ``refill`` (before every turn
the parent writes fresh values into the shared inputs in its own context and synchronizes, as the judge's
_RemoteTimer.rep does). ``child-ipc+touch``: in ``refill`` mode the child first reads one element every 64 KB of
the inputs (its own context, before the flush): warm address translations, cold L2.

    python3 scripts/runner_bias.py tasks/rmsnorm/solutions/triton_rowwise.py --out /tmp/out/runner_bias.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys

import torch
import torch.multiprocessing as mp

HIDDEN = 4096


def load(path: str):
    spec = importlib.util.spec_from_file_location("kc_bias_solution", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.run


def child(path: str, conn, x, w) -> None:
    from kernelcraft.measure.timing import capture, clock_for

    run = load(path)
    xl, wl = x.clone(), w.clone()
    graphs = {}
    for name, args in (("child-ipc", (x, w)), ("child-local", (xl, wl))):
        for _ in range(3):
            run(*args, 1e-6)
        g, _, err = capture(lambda a=args: run(*a, 1e-6), "cuda")
        if g is None:
            raise SystemExit(f"capture failed: {err}")
        graphs[name] = g
    clock = clock_for("cuda")
    step = max(1, (64 << 10) // x.element_size())
    flat = x.view(-1)
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg == "stop":
            break
        rep, touch = msg
        names = ["child-ipc", "child-local"] if rep % 2 else ["child-local", "child-ipc"]
        out = {}
        for n in names:
            if touch and n == "child-ipc":
                flat[::step].float().sum()  # one element per 64 KB: the pages, not the lines
            clock.run(n, lambda g=graphs[n]: g.replay(), rep)
        out.update(dict(clock.collect()))
        conn.send(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("solution")
    ap.add_argument("--batches", default="1,16,128,4096,16384")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--out")
    a = ap.parse_args()
    from kernelcraft.measure.timing import capture, clock_for

    ctx = mp.get_context("spawn")
    run = load(a.solution)
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "solution": a.solution, "rows": []}
    for b in [int(v) for v in a.batches.split(",")]:
        x = torch.randn(b, HIDDEN, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(HIDDEN, device="cuda", dtype=torch.bfloat16)
        fresh = torch.randn_like(x)
        for _ in range(3):
            run(x, w, 1e-6)
        g, _, err = capture(lambda x=x, w=w: run(x, w, 1e-6), "cuda")
        clock = clock_for("cuda")
        parent, kid = ctx.Pipe()
        p = ctx.Process(target=child, args=(a.solution, kid, x, w))
        p.start()
        assert parent.recv() == "ready"
        samples: dict[str, list[float]] = {}
        for mode in ("quiet", "refill", "refill+touch"):
            for rep in range(a.reps):
                # the judge's own row, in its process, between the child's turns (as peers are timed: same rotation)
                clock.run("judge", lambda g=g: g.replay(), rep)
                for n, ms in clock.collect():
                    samples.setdefault(f"{mode}/{n}", []).append(ms)
                if mode != "quiet":
                    x.copy_(fresh if rep % 2 else fresh.neg())
                    torch.cuda.synchronize()
                parent.send((rep, mode == "refill+touch"))
                for n, ms in parent.recv().items():
                    samples.setdefault(f"{mode}/{n}", []).append(ms)
        parent.send("stop")
        p.join()
        for key, s in sorted(samples.items()):
            s = sorted(s)
            q = statistics.quantiles(s, n=4)
            row = {"batch": b, "arrangement": key, "median_us": statistics.median(s) * 1e3, "p25_us": q[0] * 1e3,
                   "p75_us": q[2] * 1e3, "min_us": s[0] * 1e3, "n": len(s)}
            results["rows"].append(row)
            print(f"batch {b:6d}  {key:28s} median {row['median_us']:8.2f} us  p25 {row['p25_us']:8.2f}  "
                  f"p75 {row['p75_us']:8.2f}  min {row['min_us']:8.2f}", flush=True)
        del err
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
