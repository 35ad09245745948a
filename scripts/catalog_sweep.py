"""A design tool for catalog kernels (issue 21): candidate files and their CONFIG variants beside the task's
peers and a static torch.compile of its reference, checked against the reference under the task's contract and
timed in one process. Never a verdict: candidate code and reference share this process (``kernelcraft eval`` is
the gauntlet); it picks which variants deserve an eval.

    python scripts/catalog_sweep.py tasks/softmax tasks/softmax/solutions/triton_online.py DIR_OF_VARIANTS/ \\
        [--rows-max 64 --mb-min 64] [--peers quack,liger] [--no-compile] [--json out.json]

Files and folders name the implementations (a folder: every ``*.py`` in it, as scripts/config_variants.py
writes them). Workloads: the task's own, by default only those the targets of issue 21 judge (>= ``--mb-min``
MB moved, or <= ``--rows-max`` rows); ``--all`` for every one. Times: kernelcraft's one timer
(``measure.timing.time_interleaved``: every implementation that passed, interleaved repetition by repetition,
graph replays, the L2 flushed by a read before each call), so a sweep's ranking reads as the eval's will.
(Session 17's first sweep timed with linear_attention_bench's ``graph_time``, whose flush *writes* 256 MB: at
4-10 us kernels the dirty lines' write-back moved whole microseconds, and two decode picks that led Liger there
trailed it in the eval: results/h100/README.md.) Peers that cannot load here (library missing, wrong device) are named and left out. Prints one
table per task: each implementation's time, and the best candidate over the best peer per workload.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

import linear_attention_bench as lab  # noqa: E402

from kernelcraft.gauntlet.compare import compare, normalize_outputs  # noqa: E402
from kernelcraft.measure.timing import time_interleaved  # noqa: E402
from kernelcraft.task import load_task  # noqa: E402
from kernelcraft.task.inputs import make_inputs  # noqa: E402


def candidate_files(paths: list[str]) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for p in map(Path, paths):
        for f in sorted(p.glob("*.py")) if p.is_dir() else [p]:
            files[f.stem if f.stem not in files else f"{f.parent.name}/{f.stem}"] = f
    return files


def peers(task, only: list[str] | None, device: str) -> tuple[dict, dict[str, str]]:
    from kernelcraft.task.peers import load_peer, peer_paths

    loaded, missing = {}, {}
    for path in peer_paths(task.root):
        name = path.stem
        if only and name not in only:
            continue
        try:
            peer = load_peer(task.root, name, device)
            loaded[f"peer:{name}"] = (peer.run, peer.prepare)
        except Exception as e:  # noqa: BLE001 - a peer that cannot load here is named, not fatal
            missing[f"peer:{name}"] = f"{type(e).__name__}: {e}"[:200]
    return loaded, missing


def compiled_reference(task, ref_fn):
    import torch._dynamo

    from kernelcraft.task.dtypes import torch_dtype

    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 256)
    if hasattr(torch._dynamo.config, "recompile_limit"):
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 256)
    dtypes = [torch_dtype(s.dtype) for s in task.definition.outputs.values()]

    def as_declared(*args):
        out = ref_fn(*args)
        outs = out if isinstance(out, tuple | list) else (out,)
        cast = tuple(o.to(d) if isinstance(o, torch.Tensor) else o for o, d in zip(outs, dtypes, strict=False))
        return cast if isinstance(out, tuple | list) else cast[0]

    return torch.compile(as_declared, dynamic=False)


def selected(task, w, rows_max: int, mb_min: float) -> tuple[bool, int, float]:
    bytes_, _, _ = task.roofline(w.axes)
    first = next(iter(task.definition.outputs.values()))
    axes = task.definition.axis_values(w.axes)
    rows = int(axes.get(first.shape[0], 0)) if first.shape else 1
    mb = (bytes_ or 0) / 1e6
    return rows <= rows_max or mb >= mb_min, rows, mb


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("task")
    p.add_argument("impls", nargs="+", help="candidate files or folders of them")
    p.add_argument("--peers", default="", help="comma-separated peer names (default: every peer that loads)")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--all", action="store_true", help="every workload, not only those the targets judge")
    p.add_argument("--rows-max", type=int, default=64)
    p.add_argument("--mb-min", type=float, default=64.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reps", type=int, default=400, help="at most this many interleaved repetitions a workload")
    p.add_argument("--budget-ms", type=float, default=30.0, help="the timer's budget per implementation and workload")
    p.add_argument("--device", default="cuda")
    p.add_argument("--json", default="")
    args = p.parse_args()
    lab.DEVICE = args.device
    task = load_task(Path(args.task))
    ref_fn = lab.reference(task)
    impls = {"baseline": (lab.load_module(task.root / "baseline.py", "sweep_baseline").run, None)}
    for name, f in candidate_files(args.impls).items():
        impls[name] = (lab.load_module(f, f"sweep_{name.replace('/', '_')}").run, None)
    ours = [n for n in impls if n != "baseline"]
    loaded, missing = peers(task, [s for s in args.peers.split(",") if s] or None, args.device)
    impls.update(loaded)
    if not args.no_compile:
        impls["torch.compile"] = (compiled_reference(task, ref_fn), None)
    report = {"task": task.definition.name, "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
              "torch": torch.__version__, "peers_missing": missing, "workloads": []}
    for name, why in missing.items():
        print(f"{name} left out: {why}", flush=True)
    for w in task.workloads:
        keep, rows_n, mb = selected(task, w, args.rows_max, args.mb_min)
        if not (keep or args.all):
            continue
        axes = task.definition.axis_values(w.axes)
        inputs = make_inputs(task, w, args.seed, args.device)
        ref = normalize_outputs(ref_fn(*lab.f64(inputs)), task.definition)
        rows, timed = {}, {}
        for name, (run, prepare) in impls.items():
            row: dict = {}
            try:
                call_args = list(prepare(*inputs)) if prepare else list(inputs)
                got = normalize_outputs(run(*call_args), task.definition)
                lab.sync()
                c = compare(got, ref, task.definition, task.contract, axes, args.device, inputs)
                row.update(status=c.status, reason=c.reason[:200])
                if c.status == "PASSED":
                    timed[name] = lambda run=run, a=call_args: run(*a)
            except Exception as e:  # noqa: BLE001 - a failing implementation is a row
                row.update(status="ERROR", reason=f"{type(e).__name__}: {e}"[:300], trace=traceback.format_exc()[-800:])
            rows[name] = row
        try:
            times = time_interleaved(timed, args.device, budget_ms=args.budget_ms, min_reps=10, max_reps=args.reps)
        except Exception as e:  # noqa: BLE001 - one rotation for all: its failure is the workload's
            times = {}
            print(f"  timing failed: {type(e).__name__}: {e}"[:300], flush=True)
        for name, t in times.items():
            rows[name].update(ms=t.median_ms, method=t.method, reps=t.reps, stop=t.stop)
        best_ours = min((rows[n]["ms"], n) for n in ours if "ms" in rows[n]) if any("ms" in rows[n] for n in ours) else None
        others = [n for n in rows if n.startswith("peer:") or n == "torch.compile"]
        best_peer = min((rows[n]["ms"], n) for n in others if "ms" in rows[n]) if any("ms" in rows[n] for n in others) else None
        entry = {"uuid": w.uuid, "axes": w.axes, "rows": rows_n, "mb": mb, "results": rows,
                 "best_ours": best_ours, "best_peer": best_peer,
                 "ratio": best_peer[0] / best_ours[0] if best_ours and best_peer else None}
        report["workloads"].append(entry)
        print(f"{json.dumps(w.axes)} ({mb:.1f} MB): " + ", ".join(
            f"{n} {r['ms']:.4f}" if "ms" in r else f"{n} {r['status']}" for n, r in rows.items()), flush=True)
        del inputs, ref
        if args.device == "cuda":
            torch.cuda.empty_cache()
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    print(f"\n== {task.definition.name} on {report['device']} ({time.strftime('%Y-%m-%d')})")
    ratios = []
    for e in report["workloads"]:
        bo, bp = e["best_ours"], e["best_peer"]
        line = f"{json.dumps(e['axes'])[:50]:52s} {e['mb']:8.1f} MB"
        if bo and bp:
            ratios.append(e["ratio"])
            line += f"  ours {bo[1][:28]} {bo[0]:.4f}  best peer {bp[1][:20]} {bp[0]:.4f}  x{e['ratio']:.3f}"
        lines_per = "  " + " ".join(f"{n}={e['results'][n].get('ms', float('nan')):.4f}" for n in ours)
        print(line + "\n" + lines_per)
    if ratios:
        print(f"geomean best-ours over best-peer: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}x "
              f"over {len(ratios)} workloads")


if __name__ == "__main__":
    main()
