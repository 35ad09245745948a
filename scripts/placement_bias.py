"""Diagnostic (GPU): does a decode-sized kernel's timed latency depend on where its tensors live?

scripts/runner_bias.py found no process penalty but stable differences of up to 0.3-1 us between arrangements of
one kernel (judge vs child vs child-local: each its own input and output addresses). Here, in one process and one
interleaved rotation of the harness's timer (measure/timing.py::time_interleaved), the same kernel as:

- ``copy<i>``: 8 input sets at different addresses (a random-sized allocation between them), each with its own
  captured graph (outputs in each graph's own pool);
- ``same<i>``: 4 graphs captured on one input set (only the outputs' addresses differ);
- ``arena<i>``: 4 input sets in arenas of the driver's virtual-memory API (``cuMemCreate``), where the judge puts a
  candidate's inputs for its runner (runner/shared.py): is that memory itself slower? Session 19's A/A runs had the
  same code 0.1-0.5 us slower as a candidate than as a trusted row at decode sizes.

If the copies' medians spread by more than their confidence intervals, a row's latency at these sizes depends on
its placement, and one placement per row cannot rank two kernels closer than that spread.

    python3 scripts/placement_bias.py tasks/rmsnorm/solutions/triton_rowwise.py --out /tmp/out/placement_bias.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random

import torch

HIDDEN = 4096


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("solution")
    ap.add_argument("--batches", default="1,16,128,4096")
    ap.add_argument("--budget-ms", type=float, default=100.0)
    ap.add_argument("--arenas", type=int, default=4, help="rows on inputs in a runner arena (cuMemCreate), 0: none")
    ap.add_argument("--orders", default="cyclic,shuffled", help="KERNELCRAFT_TIMING_ORDER values, each in turn")
    ap.add_argument("--out")
    a = ap.parse_args()

    spec = importlib.util.spec_from_file_location("kc_placement_solution", a.solution)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    run = mod.run
    rng = random.Random(0)
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "solution": a.solution, "rows": []}
    for b in [int(v) for v in a.batches.split(",")]:
        keep, fns = [], {}
        w = torch.randn(HIDDEN, device="cuda", dtype=torch.bfloat16)
        base = torch.randn(b, HIDDEN, device="cuda", dtype=torch.bfloat16)
        for i in range(8):
            keep.append(torch.empty(rng.randrange(1, 3 << 20), dtype=torch.uint8, device="cuda"))
            x = base.clone()
            fns[f"copy{i}"] = lambda x=x, w=w: run(x, w, 1e-6)
        for i in range(4):
            fns[f"same{i}"] = lambda base=base, w=w: run(base, w, 1e-6)
        if a.arenas:
            # the candidate's placement: inputs in an arena of the driver's virtual-memory API (cuMemCreate), as the
            # judge shares them with a runner (runner/shared.py); here in this process, no second context
            from kernelcraft.runner.shared import layout, new_arena

            for i in range(a.arenas):
                slots, size = layout([(tuple(base.shape), "bfloat16"), (tuple(w.shape), "bfloat16")])
                arena = new_arena("cuda", size)
                keep.append(arena)
                xa, wa = arena.view(slots[0]), arena.view(slots[1])
                xa.copy_(base)
                wa.copy_(w)
                fns[f"arena{i}"] = lambda xa=xa, wa=wa: run(xa, wa, 1e-6)
        for order in a.orders.split(","):
            os.environ["KERNELCRAFT_TIMING_ORDER"] = order
            one(b, order, fns, a, out)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


def one(b, order, fns, a, out) -> None:
    from kernelcraft.measure.timing import time_interleaved

    t = time_interleaved(fns, "cuda", budget_ms=a.budget_ms, min_reps=50, max_reps=2000)
    for n, tm in t.items():
        row = {"batch": b, "order": order, "row": n, "median_us": tm.median_ms * 1e3, "ci_us": [tm.ci_low_ms * 1e3, tm.ci_high_ms * 1e3],
               "p25_us": tm.p25_ms * 1e3, "p75_us": tm.p75_ms * 1e3, "reps": tm.reps, "method": tm.method}
        out["rows"].append(row)
        print(f"{order:8s} batch {b:6d} {n:6s} median {row['median_us']:7.2f} us  ci [{row['ci_us'][0]:.2f}, {row['ci_us'][1]:.2f}]"
              f"  p25 {row['p25_us']:.2f} p75 {row['p75_us']:.2f}  reps {tm.reps}  {tm.method}", flush=True)
    arenas = [t[n].median_ms * 1e3 for n in t if n.startswith("arena")]
    if arenas:
        print(f"{order:8s} batch {b:6d} arenas: {min(arenas):.2f}-{max(arenas):.2f} us", flush=True)
    meds = [t[n].median_ms * 1e3 for n in t if n.startswith("copy")]
    print(f"{order:8s} batch {b:6d} copies: median spread {max(meds) - min(meds):.2f} us ({min(meds):.2f}-{max(meds):.2f})"
          f"; copy0 (after the no-op in a cyclic rotation) {t['copy0'].median_ms * 1e3:.2f}", flush=True)


if __name__ == "__main__":
    main()
