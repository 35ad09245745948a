"""Where the timing events sit, and what it costs a short kernel (a probe behind kc-timing's design).

    python benchmarks/event_placement.py [--numel 10000000] [--out FILE]

One float32 `y = x + 1` kernel (80 MB moved at 10M elements: ~19 us on an H200), L2 flushed by a
read before every call, timed three ways: eager launch between events; CUDA-graph replay between
events recorded outside the graph; events captured inside the graph (external event-record nodes)
around the kernel node. Nsight Compute's gpu__time_duration for the same kernel is the yardstick
(benchmarks/harness.py measures it).
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--numel", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--out")
    args = ap.parse_args()
    x = torch.randn(args.numel, device="cuda")
    y = torch.empty_like(x)
    flush = torch.ones(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32, device="cuda")

    def kernel():
        torch.add(x, 1, out=y)

    for _ in range(5):
        kernel()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        kernel()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        kernel()
    gi = torch.cuda.CUDAGraph()
    e0, e1 = torch.cuda.Event(enable_timing=True, external=True), torch.cuda.Event(enable_timing=True, external=True)
    with torch.cuda.graph(gi):
        e0.record()
        kernel()
        e1.record()
    torch.cuda.synchronize()
    res: dict[str, list[float]] = {"eager": [], "graph": [], "graph_inner_events": []}
    for _ in range(args.reps):
        for mode in res:
            torch.cuda.synchronize()
            torch.sum(flush)
            if mode == "graph_inner_events":
                gi.replay()
                torch.cuda.synchronize()
                res[mode].append(e0.elapsed_time(e1))
                continue
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            kernel() if mode == "eager" else g.replay()
            b.record()
            torch.cuda.synchronize()
            res[mode].append(a.elapsed_time(b))
    out = {m: {"median_us": 1e3 * statistics.median(v), "min_us": 1e3 * min(v)} for m, v in res.items()}
    out["numel"] = args.numel
    print(json.dumps(out, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
