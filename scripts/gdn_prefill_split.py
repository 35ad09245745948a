"""Where gdn_prefill's time goes, kernel by kernel: kernelcraft's triton_chunk beside FLA's
chunk_gated_delta_rule (the task's peer, tasks/gdn_prefill/peers/fla.py), issue 23.

    PYTHONPATH=src python scripts/gdn_prefill_split.py --out /tmp/gdn_split.json   # on a GPU, FLA installed
    PYTHONPATH=src python scripts/gdn_prefill_split.py --task kda_prefill --workloads 1ca0667f \
        --solution tasks/kda_prefill/candidates/triton_intra3.py --solution /tmp/v/triton_intra4_v0.py

``--task`` picks the task folder under tasks/ (gdn_prefill or kda_prefill: any task with a ``peers/fla.py``);
``--solution`` (repeatable) the files to split beside the peer (default: the task's promoted triton_chunk).

For each workload prefix (``--workloads``, default 8192 x 1, 1024 x 1, 4096 x 4, 4096 x 32): the task's
own inputs (kernelcraft.task.inputs.make_inputs, seed 1), a few warm calls, then ``--calls`` calls of each
implementation under torch.profiler (CUDA activity, CUPTI's kernel records); per kernel name the device
time per call (us) and its launches per call. A profile of device time only: no L2 flush between calls,
so the figures are warm-cache ones, for the split, not for the verdict (the eval record has those).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def split(fn, calls: int) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    per = defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type.name == "CUDA":
            per[e.name][0] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            per[e.name][1] += 1
    rows = {n[:90]: {"us_per_call": round(t / calls, 2), "launches_per_call": c / calls}
            for n, (t, c) in sorted(per.items(), key=lambda kv: -kv[1][0])}
    return {"total_us_per_call": round(sum(t for t, _ in per.values()) / calls, 2), "kernels": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="gdn_prefill")
    ap.add_argument("--solution", action="append", type=Path, default=[])
    ap.add_argument("--workloads", default="32bd0dca,b5716bbf,72e2d95a,c3ecd709",
                    help="uuid prefixes (the default is gdn_prefill's four)")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    import torch

    from kernelcraft.task.inputs import make_inputs
    from kernelcraft.task.loader import load_task

    torch.set_grad_enabled(False)
    task_dir = ROOT / "tasks" / args.task
    task = load_task(task_dir)
    files = args.solution or [task_dir / "solutions/triton_chunk.py"]
    names = [f.stem if [g.stem for g in files].count(f.stem) == 1 else f"{f.stem}#{i}" for i, f in enumerate(files)]
    ours = {n: _load(f, f"kc_split_{i}_{f.stem}") for i, (n, f) in enumerate(zip(names, files, strict=True))}
    peer = _load(task_dir / "peers/fla.py", "kc_peer_fla")
    result = {"gpu": torch.cuda.get_device_name(), "task": args.task, "calls": args.calls,
              "solutions": {n: str(f) for n, f in zip(names, files, strict=True)}, "workloads": {}}
    for prefix in args.workloads.split(","):
        w = next((x for x in task.workloads if x.uuid.startswith(prefix)), None)
        if w is None:
            sys.exit(f"{task_dir}/workloads.jsonl: no workload uuid starts with {prefix!r} (--workloads)")
        inputs = make_inputs(task, w, 1, "cuda")
        entry = {"axes": w.axes}
        for name, mod in ours.items():
            try:
                entry[name] = split(lambda inputs=inputs, mod=mod: mod.run(*inputs), args.calls)
            except Exception as e:  # noqa: BLE001 - a design that fails here is reported, the others still run
                entry[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        try:
            prepared = peer.prepare(*inputs)
            entry["fla"] = split(lambda prepared=prepared: peer.run(*prepared), args.calls)
        except Exception as e:  # noqa: BLE001 - FLA missing: ours alone
            entry["fla"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        result["workloads"][prefix] = entry
        print(prefix, w.axes, json.dumps({k: v.get("total_us_per_call", v) for k, v in entry.items() if k != "axes"}),
              flush=True)
        for impl in (*ours, "fla"):
            for n, r in list(entry[impl].get("kernels", {}).items())[:8]:
                print(f"  {impl:12s} {r['us_per_call']:9.2f} us x{r['launches_per_call']:.0f}  {n}")
        result["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if args.out:  # after every workload: a call's deadline that stops the rest keeps what was split
            args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
