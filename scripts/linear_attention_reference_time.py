"""Time the linear-attention prefill references: the definition's (vectorised, step-major) and the
oracle it replaced (tests/linear_attention_oracle.py: a gather/scatter of the live states and a host
sync per token), on a task's own workloads, inputs drawn as the harness draws them.

    python scripts/linear_attention_reference_time.py TASK [--impl new,old] [--dtype float64,native]
        [--workloads long_8192,...] [--threads 1] [--device cpu] [--reps 1] [--timeout-s 900]

``--workloads`` names the workloads by their cu_seqlens tensor key (data/cu_seqlens.safetensors);
default: all of the task's. ``float64`` is how the judge runs the reference for every check,
``native`` (float32 math on the bf16 inputs) how it times it and how the stress floor runs it.
``--threads 1``: a CPU worker's default (KERNELCRAFT_CPU_THREADS). One line per (workload, dtype,
impl): seconds per call (the best of ``--reps``) and, when both impls ran, the largest difference
between their outputs. An impl whose call exceeded ``--timeout-s`` is not run again on longer
workloads of that dtype.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from kernelcraft.task import load_task  # noqa: E402
from kernelcraft.task.inputs import make_inputs  # noqa: E402


def definition_reference(task_dir: Path):
    ns: dict = {}
    src = json.loads((task_dir / "definition.json").read_text())["reference"]
    exec(compile(src, str(task_dir / "definition.json"), "exec"), ns)  # noqa: S102
    return ns["run"]


def oracle(task: str):
    spec = importlib.util.spec_from_file_location("linear_attention_oracle", ROOT / "tests" / "linear_attention_oracle.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, task)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", choices=["gdn_prefill", "kda_prefill"])
    ap.add_argument("--impl", default="new,old")
    ap.add_argument("--dtype", default="float64,native")
    ap.add_argument("--workloads", default="")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout-s", type=float, default=900.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    task = load_task(ROOT / "tasks" / args.task)
    fns = {"new": definition_reference(task.root), "old": oracle(args.task)}
    impls = args.impl.split(",")
    wanted = [w for w in args.workloads.split(",") if w]
    workloads = []
    for w in task.workloads:
        key = w.inputs["cu_seqlens"].tensor_key
        if not wanted or key in wanted:
            workloads.append((key, w))
    workloads.sort(key=lambda kw: wanted.index(kw[0]) if wanted else 0)
    gave_up: set[tuple[str, str]] = set()
    print(f"# {args.task} on {args.device}, {torch.get_num_threads()} thread(s), torch {torch.__version__}")
    for key, w in workloads:
        x = make_inputs(task, w, args.seed, args.device)
        for dtype in args.dtype.split(","):
            xs = [a.double() if dtype == "float64" and isinstance(a, torch.Tensor) and a.is_floating_point() else a
                  for a in x]
            outs = {}
            for impl in impls:
                if (impl, dtype) in gave_up:
                    print(f"{key:18s} {dtype:8s} {impl}: not run (a shorter workload took over {args.timeout_s:g} s)")
                    continue
                best = float("inf")
                for _ in range(args.reps):
                    if args.device.startswith("cuda"):
                        torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    outs[impl] = fns[impl](*xs)
                    if args.device.startswith("cuda"):
                        torch.cuda.synchronize()
                    best = min(best, time.perf_counter() - t0)
                if best > args.timeout_s:
                    gave_up.add((impl, dtype))
                print(f"{key:18s} {dtype:8s} {impl}: {best:8.3f} s  (T={w.axes['total_seq_len']}, "
                      f"N={w.axes['num_seqs']})", flush=True)
            if len(outs) == 2:
                a, b = outs.values()
                diff = [float((p.double() - q.double()).abs().max()) if p.numel() else 0.0 for p, q in zip(a, b, strict=True)]
                print(f"{key:18s} {dtype:8s} max |new - old|: output {diff[0]:.3g}, new_state {diff[1]:.3g}",
                      flush=True)


if __name__ == "__main__":
    main()
