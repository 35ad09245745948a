"""Which kernel of a multi-launch solution is nondeterministic, and does it read memory nobody wrote?

Each FILE's `run` is called REPEATS times on one workload's inputs (the task's own `make_inputs`, a fixed seed) with
every scratch buffer it allocates through the module's `torch.empty` / `torch.empty_like` / `torch.zeros` recorded
(the module's global `torch` is swapped for a recording proxy; nothing of the file is edited). Every buffer is
filled before use, so a difference between calls is a race, not stale memory:
  * fill 0, REPEATS calls: per buffer (allocation order, shape, dtype), how many elements differ from call 1: the
    first buffer in launch order that differs names the racy kernel (later buffers inherit it);
  * fill NaN (float buffers) / 0x5A5A (integer ones), one call: how many elements of the returned outputs differ
    from the fill-0 call: a read of memory the solution never wrote.

    PYTHONPATH=src python3 scripts/stage_determinism.py --task gdn_prefill --workloads 32bd0dca,d790aa8b FILE...

A diagnostic for the lab notebook, not a gate: it loads candidate code beside the task's inputs and decides nothing
(the eval's own determinism gate, `kernelcraft eval`, runs candidates in the runner process).
Session 26 wrote it after session 25 found chunk3-5's 8192-token misses on an H100 were nondeterminism.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from kernelcraft.gauntlet.integrity import bitwise_equal  # noqa: E402
from kernelcraft.task.inputs import make_inputs  # noqa: E402
from kernelcraft.task.loader import load_task  # noqa: E402


class RecordingTorch:
    """Stands in for `torch` inside one module: allocations are recorded and filled."""

    def __init__(self, fill: float | None):
        self.fill = fill
        self.buffers: list[torch.Tensor] = []

    def __getattr__(self, name):
        return getattr(torch, name)

    def _keep(self, t: torch.Tensor) -> torch.Tensor:
        if self.fill is not None:
            if t.is_floating_point():
                t.fill_(self.fill)
            else:
                t.fill_(0 if self.fill == 0 else 0x5A5A if t.element_size() > 1 else 0x5A)
        self.buffers.append(t)
        return t

    def empty(self, *a, **k):
        return self._keep(torch.empty(*a, **k))

    def empty_like(self, *a, **k):
        return self._keep(torch.empty_like(*a, **k))

    def zeros(self, *a, **k):
        return self._keep(torch.zeros(*a, **k))


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"stage_det_{abs(hash(str(path)))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def call(mod, inputs, fill):
    rec = RecordingTorch(fill)
    mod.torch = rec
    try:
        outs = mod.run(*inputs)
    finally:
        mod.torch = torch
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    return [o.clone() for o in outs], [b.clone() for b in rec.buffers]


def differing(x: torch.Tensor, y: torch.Tensor) -> int:
    """Elements that differ bit for bit (the judge's own comparison; NaNs with the same bits are equal)."""
    return bitwise_equal(x, y)[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--task", default="gdn_prefill")
    ap.add_argument("--workloads", default="32bd0dca,d790aa8b", help="uuid prefixes, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", type=Path, help="JSON of every count")
    args = ap.parse_args()
    task = load_task(ROOT / "tasks" / args.task)
    report = []
    for prefix in args.workloads.split(","):
        wl = next((w for w in task.workloads if w.uuid.startswith(prefix)), None)
        if wl is None:
            sys.exit(f"{args.task}: no workload starts with {prefix!r} (workloads.jsonl)")
        inputs = make_inputs(task, wl, args.seed, args.device)
        for path in args.files:
            mod = load(path)
            runs = [call(mod, inputs, 0.0) for _ in range(args.repeats)]
            (o0, b0) = runs[0]
            row = {"workload": prefix, "file": str(path), "buffers": [], "outputs_race": [], "outputs_unwritten": []}
            for i, buf in enumerate(b0):
                diffs = [differing(buf, r[1][i]) for r in runs[1:]]
                row["buffers"].append({"index": i, "shape": list(buf.shape), "dtype": str(buf.dtype).replace("torch.", ""),
                                       "differs": diffs})
            row["outputs_race"] = [[differing(o, r[0][j]) for r in runs[1:]] for j, o in enumerate(o0)]
            on, _ = call(mod, inputs, float("nan"))
            row["outputs_unwritten"] = [differing(o, n) for o, n in zip(o0, on, strict=True)]
            report.append(row)
            name = path.name
            print(f"{prefix} {name}: outputs differ between calls {row['outputs_race']}; "
                  f"from a NaN-filled call {row['outputs_unwritten']}", flush=True)
            for b in row["buffers"]:
                flag = "  <- differs" if any(b["differs"]) else ""
                print(f"    buffer {b['index']:2d} {b['dtype']:9s} {str(b['shape']):22s} {b['differs']}{flag}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
