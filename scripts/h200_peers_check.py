"""Check every catalog peer (tasks/*/peers/*.py) on the GPU: its library imports, it runs on each
task's smallest and largest workload, its outputs pass the task's own checker against the float64
reference (computed on the GPU, as the gauntlet does), it leaves its inputs untouched, it survives
CUDA-graph capture (kernelcraft's timer replays graphs), and how long it takes (triton's do_bench,
L2 flushed between calls, median; and do_bench_cudagraph). baseline.py is timed beside it.

Run from the repository root on the H200, after installing the peer wheels (scripts/peer_wheels.sh):

    PYTHONPATH=/tmp/site:$PWD/src python3 scripts/h200_peers_check.py [--tasks rmsnorm,softmax] [--peers quack]

One line per (task, workload, peer); the whole result goes to $OUT/peers_check.json (or --out).
Entries of PYTHONPATH that hold .pth files are processed as site directories first, because
nvidia-cutlass-dsl puts its ``cutlass`` package on the path through one (pip --target does not).
Exit status 0 even when peers fail: the JSON says which; 2 when nothing could run at all.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import site
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _process_pth_dirs() -> None:
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry and Path(entry).is_dir() and any(Path(entry).glob("*.pth")):
            site.addsitedir(entry)


_process_pth_dirs()

import torch  # noqa: E402

from kernelcraft.gauntlet.compare import compare, normalize_outputs  # noqa: E402
from kernelcraft.task import load_task  # noqa: E402
from kernelcraft.task.inputs import make_inputs  # noqa: E402


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def clone(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def upcast(args):
    return [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def version_of(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def skip_reason(peer: dict, device: str) -> str:
    """Why this peer cannot run here, or "" (the same rules the peer mechanism applies)."""
    for mod in peer["modules"]:
        try:
            importlib.import_module(mod)
        except Exception as e:  # noqa: BLE001 - a broken install is as good as a missing one here
            return f"module {mod!r} does not import ({type(e).__name__}: {e}); {peer['install']}"
    if device not in peer["devices"]:
        return f"runs on {peer['devices']} only"
    cap = peer.get("min_capability")
    if device == "cuda" and cap and tuple(torch.cuda.get_device_capability()) < tuple(cap):
        return f"needs compute capability >= {cap[0]}.{cap[1]}"
    return ""


DEVICE = "cuda"


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def judge(task, axes, outs, ref, pristine) -> dict:
    check = compare(outs, ref, task.definition, task.contract, axes, DEVICE, pristine)
    return {"status": "ok" if check.status == "PASSED" else "mismatch", "check": check.status,
            "reason": check.reason, "max_abs_error": check.max_abs_error, "max_rel_error": check.max_rel_error}


def call(module, inputs):
    """prepare (if any) on fresh copies, then run: the peer mechanism's calling convention."""
    args = clone(inputs)
    if hasattr(module, "prepare"):
        args = list(module.prepare(*args))
    return args


def graph_check(module, inputs, task, axes, ref, pristine) -> dict:
    """Warm up on one prepared set, capture run() on a second (capture runs nothing), replay once,
    and judge the replay's outputs: what the graph-replaying timer would have measured."""
    warm = call(module, inputs)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        module.run(*warm)
    torch.cuda.current_stream().wait_stream(side)
    sync()
    args = call(module, inputs)
    sync()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            captured = module.run(*args)
    except Exception as e:  # noqa: BLE001
        return {"graph": "capture-failed", "graph_reason": f"{type(e).__name__}: {str(e)[:300]}"}
    graph.replay()
    sync()
    verdict = judge(task, axes, normalize_outputs(captured, task.definition), ref, pristine)
    return {"graph": verdict["status"], "graph_reason": verdict["reason"]}


def time_it(fn) -> dict:
    from triton.testing import do_bench, do_bench_cudagraph

    out = {"eager_ms": float(do_bench(fn, warmup=25, rep=100, return_mode="median"))}
    try:
        out["cudagraph_ms"] = float(do_bench_cudagraph(fn, rep=100, return_mode="median"))
    except Exception as e:  # noqa: BLE001
        out["cudagraph_ms"] = None
        out["cudagraph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    return out


def pick_workloads(task, every: bool):
    ws = list(task.workloads)
    if every:
        return ws
    by_bytes = sorted(ws, key=lambda w: task.roofline(w.axes)[0])
    return [by_bytes[0]] if len(by_bytes) == 1 else [by_bytes[0], by_bytes[-1]]


def check_task(task_dir: Path, peer_filter: set[str], every: bool, timing: bool, graphs: bool, seed: int) -> list[dict]:
    task = load_task(task_dir)
    peer_files = sorted((task_dir / "peers").glob("*.py"))
    peers = []
    for path in peer_files:
        module = load_module(path, f"kc_peer_{task_dir.name}_{path.stem}")
        if peer_filter and module.PEER["name"] not in peer_filter:
            continue
        peers.append((path, module))
    if not peers:
        return []
    baseline = load_module(task.baseline_path, f"kc_baseline_{task_dir.name}")
    ns: dict = {}
    exec(compile(task.definition.reference, "<reference>", "exec"), ns)  # noqa: S102 - the task's reference
    reference = ns["run"]
    rows = []
    for w in pick_workloads(task, every):
        axes = task.definition.axis_values(w.axes)
        inputs = make_inputs(task, w, seed, DEVICE)
        pristine = clone(inputs)
        try:
            ref, ref_kind = normalize_outputs(reference(*upcast(inputs)), task.definition), "float64"
        except (RuntimeError, TypeError, NotImplementedError):
            ref, ref_kind = normalize_outputs(reference(*inputs), task.definition), "native"
        sync()
        label = ",".join(f"{k}={v}" for k, v in w.axes.items())
        if timing:
            b = time_it(lambda inputs=inputs: baseline.run(*inputs))
            rows.append({"task": task_dir.name, "workload": w.uuid, "axes": w.axes, "peer": "baseline",
                         "library": "torch", "version": torch.__version__, "status": "ok", **b})
            print(f"{task_dir.name:20s} {label:42s} {'baseline':11s} {'torch ' + torch.__version__:24s} "
                  f"{'ok':10s} {'':14s} eager {b['eager_ms']:.4f} ms  graph {b['cudagraph_ms'] or float('nan'):.4f} ms",
                  flush=True)
        for _path, module in peers:
            peer = module.PEER
            row = {"task": task_dir.name, "workload": w.uuid, "axes": w.axes, "peer": peer["name"],
                   "library": peer["library"], "version": version_of(peer["library"]), "reference": ref_kind}
            reason = skip_reason(peer, DEVICE)
            if reason:
                row.update(status="skipped", reason=reason)
            else:
                try:
                    t0 = time.perf_counter()
                    args = call(module, inputs)
                    outs = normalize_outputs(module.run(*args), task.definition)
                    sync()
                    row["first_call_s"] = round(time.perf_counter() - t0, 3)
                    row.update(judge(task, axes, outs, ref, pristine))
                    touched = [n for n, a, b in zip(task.definition.inputs, inputs, pristine, strict=True)
                               if isinstance(a, torch.Tensor) and not torch.equal(a, b)]
                    if touched:
                        row.update(status="mismatch", reason=f"modified the caller's inputs {touched}")
                    if graphs:
                        row.update(graph_check(module, inputs, task, axes, ref, pristine))
                    if timing:
                        targs = call(module, inputs)
                        row.update(time_it(lambda targs=targs, run=module.run: run(*targs)))
                    del args, outs
                except Exception as e:  # noqa: BLE001 - a peer's failure is its row, not the run's end
                    row.update(status="error", reason=f"{type(e).__name__}: {str(e)[:500]}",
                               traceback=traceback.format_exc()[-2000:])
            err = f"max_abs {row['max_abs_error']:.3g}" if "max_abs_error" in row else ""
            lat = (f"eager {row['eager_ms']:.4f} ms  graph {row.get('cudagraph_ms') or float('nan'):.4f} ms"
                   if "eager_ms" in row else "")
            extra = "" if row["status"] == "ok" else f"  {row.get('reason', '')[:160]}"
            g = f"  graph-check {row['graph']}" if row.get("graph") not in (None, "ok") else ""
            print(f"{task_dir.name:20s} {label:42s} {peer['name']:11s} {peer['library'] + ' ' + row['version']:24s} "
                  f"{row['status']:10s} {err:14s} {lat}{g}{extra}", flush=True)
            rows.append(row)
            if DEVICE == "cuda":
                torch.cuda.empty_cache()
        del inputs, pristine, ref
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
    return rows


def prebuild_flashinfer() -> dict:
    """Compile the FlashInfer JIT modules the peers use in one ninja run (all cores at once)
    instead of one module at a time on each first call; what it cost goes into the JSON."""
    t0 = time.perf_counter()
    try:
        from flashinfer.jit.activation import gen_act_and_mul_module
        from flashinfer.jit.core import build_jit_specs
        from flashinfer.jit.rope import gen_rope_module
        from flashinfer.jit.topk import gen_topk_module

        build_jit_specs([gen_act_and_mul_module("silu"), gen_act_and_mul_module("gelu_tanh"), gen_rope_module(),
                         gen_topk_module()], verbose=False)
        result = {"status": "ok"}
    except Exception as e:  # noqa: BLE001 - the peers' own first calls then build (or fail) one by one
        result = {"status": "error", "reason": f"{type(e).__name__}: {str(e)[:500]}"}
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"flashinfer JIT prebuild: {result}", flush=True)
    return result


def environment() -> dict:
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0]}
    if DEVICE == "cuda":
        env.update(device=torch.cuda.get_device_name(), capability=list(torch.cuda.get_device_capability()))
    for dist in ("triton", "liger-kernel", "quack-kernels", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13",
                 "apache-tvm-ffi", "flashinfer-python", "fla-core", "cuda-bindings"):
        env[dist] = version_of(dist)
    try:
        import flashinfer.norm

        env["flashinfer_norm_backend"] = "cuda-jit" if flashinfer.norm._USE_CUDA_NORM else "cute-dsl"
    except Exception as e:  # noqa: BLE001
        env["flashinfer_norm_backend"] = f"unavailable ({type(e).__name__})"
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="", help="comma-separated task folders (default: all with peers)")
    ap.add_argument("--peers", default="", help="comma-separated peer names (default: all)")
    ap.add_argument("--all-workloads", action="store_true", help="every workload, not the smallest and largest")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--no-graphs", action="store_true", help="skip the CUDA-graph capture check")
    ap.add_argument("--no-prebuild", action="store_true", help="let each FlashInfer peer JIT-build on its first call")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cpu: a dry run of the CPU peers only (no timing, no graphs), to test this script")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "peers_check.json"))
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("no CUDA device (--device cpu runs the CPU peers only)", file=sys.stderr)
        return 2
    if DEVICE == "cpu":
        args.no_timing = args.no_graphs = True
    names = [t for t in args.tasks.split(",") if t] or sorted(p.parent.name for p in (ROOT / "tasks").glob("*/peers"))
    peer_filter = {p for p in args.peers.split(",") if p}
    jit_env = {}
    if DEVICE == "cuda":  # before FlashInfer is imported: CUDA_HOME, curand.h and libcuda.so for its JIT
        from peer_jit_env import apply

        jit_env = apply()
    env = environment()
    env["jit_env"] = jit_env
    print(json.dumps(env), flush=True)
    if DEVICE == "cuda" and not args.no_prebuild and (not peer_filter or "flashinfer" in peer_filter) \
            and env["flashinfer-python"] != "?":
        env["flashinfer_jit_prebuild"] = prebuild_flashinfer()
    rows: list[dict] = []
    t0 = time.perf_counter()
    for name in names:
        t_task = time.perf_counter()
        rows += check_task(ROOT / "tasks" / name, peer_filter, args.all_workloads, not args.no_timing,
                           not args.no_graphs, args.seed)
        print(f"{name}: {time.perf_counter() - t_task:.0f} s", flush=True)
        Path(args.out).write_text(json.dumps({"environment": env, "rows": rows}, indent=1))  # partial results survive a kill
    counts: dict[str, int] = {}
    for r in rows:
        if r["peer"] != "baseline":
            counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"done in {time.perf_counter() - t0:.0f} s: {counts}; wrote {args.out}", flush=True)
    return 0 if rows else 2


if __name__ == "__main__":
    sys.exit(main())
