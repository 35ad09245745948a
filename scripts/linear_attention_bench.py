"""Linear-attention tasks on a GPU: kernelcraft's solutions, the baselines and the FLA peers side
by side, checked against the float64 reference under each task's contract and timed.

Per task and workload (the task's own workloads.jsonl, inputs drawn as the harness draws them),
plus the prefill stress scenarios of scripts/linear_attention_tolerances.py (no decay over 8192
tokens, decay ~0, beta ~1 and ~0, nearly parallel keys): each implementation's verdict under the
task's contract (kernelcraft.gauntlet.compare, as the gauntlet judges) and its worst errors, and
its time: median of CUDA-graph replays with the L2 flushed before each (as kc-timing/3 does;
eager when the call cannot be captured) and triton.testing.do_bench's median (eager, L2 flushed).
gdn_decode also gets the fraction of the copy roofline (a 1 GiB device copy timed the same way).

    python scripts/linear_attention_bench.py [--tasks gdn_decode,gdn_prefill,kda_prefill] [--json PATH]

Needs a CUDA device; FLA rows are skipped (with the import error) when fla is not importable.
Prints a table per task and a summary last; writes everything to --json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

from kernelcraft.gauntlet.compare import compare, normalize_outputs  # noqa: E402
from kernelcraft.task import load_task  # noqa: E402
from kernelcraft.task.inputs import make_inputs  # noqa: E402

DEVICE = "cuda"
STRESS = [("no_decay", [8192]), ("fast_decay", [256]), ("beta_one", [2048]), ("beta_zero", [256]),
          ("parallel_keys", [2048]), ("contract", [1, 63, 64, 65, 200, 7, 0, 130])]


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def graph_time(fn, reps: int = 30) -> tuple[float, str]:
    """Median ms of CUDA-graph replays, L2 flushed (a 256 MB write) before each; eager if capture fails."""
    if DEVICE == "cpu":  # smoke runs only: wall clock, three calls
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times), "cpu-wall"
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    torch.cuda.synchronize()
    method = "graph"
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        torch.cuda.synchronize()
        call = g.replay
    except Exception:  # noqa: BLE001 - host syncs etc.: time eagerly
        torch.cuda.synchronize()
        method, call = "eager", fn
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), method


def do_bench(fn) -> float:
    import triton

    if DEVICE == "cpu":
        return float("nan")

    return float(triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median"))


def copy_bandwidth() -> float:
    """GB/s of a 1 GiB device-to-device copy (read + write counted), the decode kernel's roofline."""
    src = torch.empty(1 << 30 if DEVICE == "cuda" else 1 << 24, dtype=torch.uint8, device=DEVICE)
    dst = torch.empty_like(src)
    ms, _ = graph_time(lambda: dst.copy_(src), reps=10)
    return 2 * src.numel() / ms / 1e6


def implementations(task_dir: Path) -> dict:
    impls = {"baseline": (load_module(task_dir / "baseline.py", f"bl_{task_dir.name}").run, None)}
    for p in sorted((task_dir / "solutions").glob("*.py")):
        impls[p.stem] = (load_module(p, f"sol_{task_dir.name}_{p.stem}").run, None)
    peer_path = task_dir / "peers" / "fla.py"
    if peer_path.is_file():
        peer = load_module(peer_path, f"peer_{task_dir.name}")
        impls["fla"] = (peer.run, getattr(peer, "prepare", None))
    return impls


def check_and_time(task, impls, inputs, axes, ref, timing: bool) -> dict:
    rows = {}
    for name, (run, prepare) in impls.items():
        row: dict = {}
        try:
            args = list(prepare(*inputs)) if prepare else list(inputs)
            sync()
            got = normalize_outputs(run(*args), task.definition)
            sync()
            c = compare(got, ref, task.definition, task.contract, axes, DEVICE, inputs)
            row.update(status=c.status, max_abs_error=c.max_abs_error, reason=c.reason[:300])
            errs = {}
            for out_name, g, r in zip(task.definition.outputs, got, ref, strict=True):
                errs[out_name] = float((g.double() - r).abs().max()) if g.numel() else 0.0
            row["errors"] = errs
            if timing:
                row["graph_ms"], row["method"] = graph_time(lambda run=run, args=args: run(*args))
                row["do_bench_ms"] = do_bench(lambda run=run, args=args: run(*args))
        except Exception as e:  # noqa: BLE001 - a failing implementation is a row, not the end of the run
            row.update(status="ERROR", reason=f"{type(e).__name__}: {e}"[:300], trace=traceback.format_exc()[-1500:])
        rows[name] = row
    return rows


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def reference(task):
    ns: dict = {}
    exec(compile(task.definition.reference, "<reference>", "exec"), ns)  # noqa: S102 - the task's reference
    return ns["run"]


def f64(args):
    return [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def bench_task(name: str, seed: int, tasks_dir: Path, stress: bool) -> dict:
    task_dir = tasks_dir / name
    task = load_task(task_dir)
    ref_fn = reference(task)
    impls = implementations(task_dir)
    out: dict = {"task": name, "definition": task.definition.name, "workloads": [], "stress": []}
    for w in task.workloads:
        axes = task.definition.axis_values(w.axes)
        inputs = make_inputs(task, w, seed, DEVICE)
        t0 = time.time()
        ref = normalize_outputs(ref_fn(*f64(inputs)), task.definition)
        sync()
        rows = check_and_time(task, impls, inputs, axes, ref, timing=True)
        bytes_, flops, _ = task.roofline(w.axes)
        out["workloads"].append({"uuid": w.uuid, "axes": w.axes, "bytes": bytes_, "flops": flops,
                                 "reference_s": time.time() - t0, "rows": rows})
        print(f"  {name} {w.axes}: " + ", ".join(
            f"{n} {r['status']}" + (f" {r['graph_ms']:.4f} ms" if "graph_ms" in r else "") for n, r in rows.items()),
            flush=True)
        del inputs, ref
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
    if stress and name in ("gdn_prefill", "kda_prefill"):
        from linear_attention_tolerances import scenario_inputs

        gen = torch.Generator().manual_seed(seed)
        for scen, lens in STRESS:
            if name == "kda_prefill" and scen == "no_decay":
                lens = [4096]
            inputs = [x.to(DEVICE) if isinstance(x, torch.Tensor) else x for x in scenario_inputs(name, scen, lens, gen)]
            axes = task.definition.axis_values({"total_seq_len": sum(lens), "num_seqs": len(lens),
                                                "len_cu_seqlens": len(lens) + 1})
            ref = normalize_outputs(ref_fn(*f64(inputs)), task.definition)
            rows = check_and_time(task, impls, inputs, axes, ref, timing=False)
            out["stress"].append({"scenario": scen, "lens": lens, "rows": rows})
            print(f"  {name} stress {scen}: " + ", ".join(
                f"{n} {r['status']} {r.get('errors', {})}" for n, r in rows.items()), flush=True)
    return out


def summarize(res: dict, copy_gbs: float) -> list[str]:
    lines = [f"== {res['task']} ({res['definition']})"]
    names = list(res["workloads"][0]["rows"]) if res["workloads"] else []
    lines.append("workload".ljust(44) + "".join(n[:16].rjust(18) for n in names)
                 + ("   vs fla" if "fla" in names else "") + ("   % copy" if res["task"] == "gdn_decode" else ""))
    speedups = []
    mine = [n for n in names if n not in ("baseline", "fla")]
    for w in res["workloads"]:
        cells = []
        for n in names:
            r = w["rows"][n]
            cells.append((f"{r['graph_ms']:.4f}" if r["status"] == "PASSED" else r["status"][:10]).rjust(18)
                         if "graph_ms" in r or r["status"] != "PASSED" else "-".rjust(18))
        line = json.dumps(w["axes"])[:43].ljust(44) + "".join(cells)
        best = [w["rows"][n] for n in mine if w["rows"][n].get("status") == "PASSED"]
        fla = w["rows"].get("fla", {})
        if best and fla.get("status") == "PASSED":
            s = fla["graph_ms"] / min(r["graph_ms"] for r in best)
            speedups.append(s)
            line += f"  {s:6.2f}x"
        if res["task"] == "gdn_decode" and best:
            line += f"  {100 * w['bytes'] / (min(r['graph_ms'] for r in best) * 1e6) / copy_gbs:6.1f}%"
        lines.append(line)
    if speedups:
        lines.append(f"geomean speedup of the best kernelcraft solution over FLA: "
                     f"{math.exp(sum(map(math.log, speedups)) / len(speedups)):.3f}x over {len(speedups)} workloads")
    for s in res["stress"]:
        lines.append(f"stress {s['scenario']:14s} " + ", ".join(f"{n}: {r['status']}" for n, r in s["rows"].items()))
    return lines


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", default="gdn_decode,gdn_prefill,kda_prefill")
    p.add_argument("--json", default="linear_attention_bench.json")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda", help="cpu: a smoke run of this script (Triton interpreter)")
    p.add_argument("--tasks-dir", default=str(ROOT / "tasks"), help="where the task folders are")
    p.add_argument("--no-stress", action="store_true", help="skip the prefill stress scenarios")
    args = p.parse_args()
    global DEVICE
    DEVICE = args.device
    assert DEVICE == "cpu" or torch.cuda.is_available(), "needs a CUDA device (or --device cpu for a smoke run)"
    copy_gbs = copy_bandwidth()
    report = {"device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu", "copy_GBps": copy_gbs, "torch": torch.__version__, "tasks": []}
    try:
        import fla

        report["fla"] = getattr(fla, "__version__", "?")
    except Exception as e:  # noqa: BLE001
        report["fla"] = f"not importable: {e}"
    print(f"device {report['device']}, 1 GiB copy {copy_gbs:.0f} GB/s, fla {report['fla']}", flush=True)
    for name in args.tasks.split(","):
        try:
            report["tasks"].append(bench_task(name, args.seed, Path(args.tasks_dir), not args.no_stress))
        except Exception as e:  # noqa: BLE001
            report["tasks"].append({"task": name, "error": traceback.format_exc()[-2000:]})
            print(f"{name}: {e}", flush=True)
        Path(args.json).write_text(json.dumps(report, indent=1))
    print()
    for res in report["tasks"]:
        print("\n".join(summarize(res, copy_gbs) if "error" not in res else [f"== {res['task']}: ERROR"]))


if __name__ == "__main__":
    main()
