"""Short prefills of a linear-attention task on a GPU: candidates (with CONFIG overrides) beside every peer of
the task (tasks/<task>/peers/*.py: FLA's chunked and fused-recurrent kernels), at total lengths where a
token-by-token kernel may beat the chunked ones. A design tool that picks a CONFIG (a crossover length, a
tile width) before an eval judges it; not a verdict (no fresh-input checks, no holdouts, no confirmation).

    PYTHONPATH=src python scripts/la_short_sweep.py --task kda_prefill \\
        --impl intra5=tasks/kda_prefill/solutions/triton_intra5.py \\
        --impl 'r16=tasks/kda_prefill/candidates/triton_intra7.py:{"RECUR_MAX_T": 16}' \\
        --shapes 1x1,4x1,16x1,32x1,64x1,16x4,64x8 --out /tmp/short.json

--shapes: TOTALxN (total_seq_len x num_seqs; the lengths are drawn by the task's own input generator,
kernelcraft.task.inputs.make_inputs, seed 1). Each implementation runs on the same inputs; its output and new
state are compared with the first implementation's (max |difference|, a sanity check against a broken
variant, not the contract's check), then timed with triton.testing.do_bench (its L2 clear before every call,
median of --rep ms of calls: "us", the host's view, launch overhead included: a few-microsecond kernel behind a
Python wrapper reads as the wrapper) and, with --graph (the default on a GPU), replayed from a CUDA graph the
way the eval times it (kernelcraft.measure.timing: the graph captured once, each sample L2-flushed, the blocking
kernel only where the eval's switch turns it on, median of --samples: "graph_us", the device's time).
Session 30 (H100): do_bench read FLA's chunked GDN at 1 token as 691 us and chunk8 as 87 us; the eval's graph
replays read 0.028 ms and 0.023 ms. Choose a crossover from "graph_us". Prints one table (us, graph us) and
writes --out after every shape, so a call's deadline that stops the rest keeps what was measured; the record
carries each file's sha256 and the torch / triton versions.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path, name: str, config: dict):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if config:
        unknown = set(config) - set(getattr(mod, "CONFIG", {}))
        if unknown:
            sys.exit(f"{path}: CONFIG has no key {sorted(unknown)} (--impl NAME=FILE:JSON)")
        mod.CONFIG.update(config)
    return mod


def parse_impl(text: str) -> tuple[str, Path, dict]:
    """NAME=FILE or NAME=FILE:{json CONFIG overrides}."""
    name, _, rest = text.partition("=")
    if not name or not rest:
        raise argparse.ArgumentTypeError(f"--impl {text!r}: write NAME=FILE or NAME=FILE:JSON")
    path, _, cfg = rest.partition(":")
    return name, Path(path), json.loads(cfg) if cfg else {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="kda_prefill")
    ap.add_argument("--impl", action="append", type=parse_impl, default=[])
    ap.add_argument("--shapes", default="1x1,4x1,16x1,32x1,64x1,128x1,16x4,64x8")
    ap.add_argument("--rep", type=int, default=100, help="do_bench's rep (ms of calls per measurement)")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--graph", action=argparse.BooleanOptionalAction, default=True,
                    help="also time CUDA-graph replays as the eval does (device time); GPU only")
    ap.add_argument("--samples", type=int, default=30, help="graph replays timed per implementation and shape")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run under TRITON_INTERPRET=1 (one wall-clock call)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    import torch
    import triton.testing

    from kernelcraft.task.inputs import make_inputs
    from kernelcraft.task.loader import load_task
    from kernelcraft.task.workload import Workload

    torch.set_grad_enabled(False)
    task_dir = ROOT / "tasks" / args.task
    task = load_task(task_dir)
    impls = {}  # name -> module with run (and a peer's prepare: host-side tables, built once, outside the timing)
    for i, (name, path, cfg) in enumerate(args.impl):
        impls[name] = _load(path, f"kc_short_{i}_{path.stem}", cfg)
    if not args.no_peers:
        for p in sorted((task_dir / "peers").glob("*.py")):
            impls[f"peer:{p.stem}"] = _load(p, f"kc_short_peer_{p.stem}", {})
    cuda = args.device == "cuda"
    files = {n: p for n, p, _ in args.impl} | {n: task_dir / "peers" / f"{n[5:]}.py" for n in impls if n.startswith("peer:")}
    result = {"gpu": torch.cuda.get_device_name() if cuda else "cpu", "task": args.task, "rep_ms": args.rep,
              "impls": {n: f"{p}:{json.dumps(c)}" for n, p, c in args.impl},
              "sha256": {n: hashlib.sha256(Path(p).read_bytes()).hexdigest() for n, p in files.items()},
              "versions": {"torch": torch.__version__, "triton": triton.__version__, "python": sys.version.split()[0]},
              "clock": "do_bench (us)" + (" + graph replays, L2-flushed (graph_us)" if cuda and args.graph else ""),
              "shapes": {}}
    graph_clock = None
    if cuda and args.graph:
        from kernelcraft.measure.timing import block_default, capture, clock_for, replay

        # the eval's own default (the blocking-kernel switch, off unless set): session 30's first graph sweep
        # forced it on (and printed no row within its 60 s on a fresh H100, compiles included: not told apart)
        graph_blocked = block_default()
        graph_clock = clock_for("cuda", block=graph_blocked)
        result["graph_blocked"] = graph_blocked
    names = list(impls)
    print(f"{'shape':>10s} " + " ".join(f"{n[:14]:>14s}" for n in names), flush=True)
    for shape in args.shapes.split(","):
        total, n = (int(x) for x in shape.split("x"))
        axes = {"total_seq_len": total, "num_seqs": n, "len_cu_seqlens": n + 1}
        w = Workload(uuid=f"short-{shape}", axes=axes)
        inputs = make_inputs(task, w, 1, args.device)
        entry, first = {"axes": axes, "lengths": inputs[8].diff().tolist()}, None
        for name, mod in impls.items():
            try:
                call_args = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
                if hasattr(mod, "prepare"):
                    call_args = list(mod.prepare(*call_args))
                out = mod.run(*call_args)
                if cuda:
                    torch.cuda.synchronize()
                if first is None:
                    first, diff = out, [0.0, 0.0]
                else:
                    diff = [(a.float() - b.float()).abs().max().item() for a, b in zip(out, first, strict=True)]
                if cuda:
                    ms = triton.testing.do_bench(lambda mod=mod, call_args=call_args: mod.run(*call_args), rep=args.rep)
                else:
                    t0 = time.perf_counter()
                    mod.run(*call_args)
                    ms = (time.perf_counter() - t0) * 1000
                entry[name] = {"us": round(ms * 1000, 2), "max_diff_vs_first": diff}
                if graph_clock is not None:
                    g, _, err = capture(lambda mod=mod, call_args=call_args: mod.run(*call_args), "cuda")
                    if g is None:
                        entry[name]["graph_error"] = err
                    else:
                        for _ in range(args.samples):
                            graph_clock.run(name, lambda g=g: replay(g), 1, block=graph_blocked)
                        samples = sorted(t for _, t in graph_clock.collect())
                        entry[name]["graph_us"] = round(samples[len(samples) // 2] * 1000, 2)
                        del g
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported; the others still run
                entry[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        result["shapes"][shape] = entry
        def cell(e: dict) -> str:
            if "us" not in e:
                return f"{'error':>14s}"
            return f"{e['us']:.1f}/{e['graph_us']:.1f}".rjust(14) if "graph_us" in e else f"{e['us']:14.2f}"

        cells = [cell(entry[n]) for n in names]
        print(f"{shape:>10s} " + " ".join(cells), flush=True)
        for nm in names:
            if "error" in entry[nm]:
                print(f"    {nm}: {entry[nm]['error']}", flush=True)
                continue
            if "graph_error" in entry[nm]:
                print(f"    {nm}: no graph ({entry[nm]['graph_error']})", flush=True)
            elif max(entry[nm]["max_diff_vs_first"]) > 0.05:
                print(f"    {nm}: differs from {names[0]} by {entry[nm]['max_diff_vs_first']}", flush=True)
        result["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if args.out:
            args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
