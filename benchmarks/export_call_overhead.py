"""Host-side cost of one eager call of an exported torch-op, without the kernel.

The H200 e2e run (results/h200/e2e/2026-12-01-compiled/e2e_decode.log) timed the exported RMSNorm at
0.1056 ms per eager call where the same kernel ran in 0.0061 ms under torch.compile. This measures, on
the CPU, what the package's call path adds around the solution's own launcher: the three CPU e2e fixture
exports (tests/fixtures/e2e: rmsnorm, fused_add_rmsnorm, silu_mul, hidden 64) are built, every Triton
launch is replaced by a no-op (``KernelInterface.__getitem__``, measurement only: the interpreter's kernel
time would swamp the figure), and three entry points are timed on the same in-envelope arguments:

- ``launcher``: the solution's entry point called as a plain Python function (its wrapper code, its
  output allocation, the no-op launch);
- ``op``: ``PACKAGE.op(...)``, what a model calls;
- ``dispatcher``: ``torch.ops.NS.NAME.default(...)``, the op through torch's dispatcher.

``op - launcher`` is the package's per-call overhead. Each figure is the median over repeats of
(``perf_counter_ns`` over N calls) / N, the entries interleaved within a repeat. Both registrations are
measured, each in its own process: ``custom_op`` (what a package validated through the Triton
interpreter registers on the CPU) and ``triton_op`` (what a GPU export registers: triton imported
without the interpreter, the kernel loaded as a GPU export would be). ``--baseline-rev REV`` measures
the runtime of that revision (``git show REV:src/kernelcraft/export/_runtime.py``; repeatable) in
alternating processes with the working tree's, so all see the same machine load.

    python benchmarks/export_call_overhead.py --baseline-rev df5c11c --baseline-rev e682892 \
        --calls 10000 --out results/cpu/export_call_overhead.json

Top-level imports are the standard library only: a child sets TRITON_INTERPRET (or not) before
anything imports triton.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "e2e"
KERNELS = {"rmsnorm": "triton_rowwise", "fused_add_rmsnorm": "triton_rowwise", "silu_mul": "triton_tiled"}
RUNTIME = "src/kernelcraft/export/_runtime.py"
MODES = ("custom_op", "triton_op")
TOKENS = 8  # the e2e decode shape's rows ([8, hidden]), clamped into each var axis' validated range


# -- child: one registration mode, one runtime, every package -----------------------------------------------
def _args(ex) -> tuple:
    import torch

    env, defn = ex.validated, ex.definition
    axes = dict(env["const_axes"])
    for ax, r in env["var_axes"].items():
        axes[ax] = r["values"][0] if ex.meta.get("exact_shapes") else min(max(TOKENS, r["min"]), r["max"])
    g = torch.Generator().manual_seed(0)
    out = []
    for name, spec in defn["inputs"].items():
        if spec["shape"] is None:
            tested = env.get("scalars_tested", {}).get(name)
            out.append(tested[0] if tested else 1e-5)
            continue
        dtype = getattr(torch, env["dtypes"][name])
        out.append(torch.randn([axes[a] for a in spec["shape"]], generator=g).to(dtype))
    return tuple(out)


def _time(fns: dict, calls: int, repeats: int, warmup: int) -> dict:
    for f in fns.values():
        for _ in range(warmup):
            f()
    per: dict = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        for k in names[r % len(names):] + names[:r % len(names)]:  # rotate the order: no entry always first
            f = fns[k]
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                f()
            per[k].append((time.perf_counter_ns() - t0) / calls)
    return {k: {"median_us": statistics.median(v) / 1e3, "min_us": min(v) / 1e3, "max_us": max(v) / 1e3}
            for k, v in per.items()}


def child(mode: str, src: Path, calls: int, repeats: int, warmup: int) -> dict:
    if mode == "custom_op":
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    import importlib

    import torch
    import triton  # noqa: F401 - imported here first: with or without the interpreter, as the mode says
    from triton.runtime.jit import KernelInterface

    def no_launch(*a, **k):
        return None

    KernelInterface.__getitem__ = lambda self, grid: no_launch  # measurement only: no kernel runs
    torch.set_num_threads(1)
    sys.path.insert(0, str(src))
    out = {}
    for pkg_dir in sorted(p for p in src.iterdir() if (p / "kernelcraft_export.json").is_file()):
        pkg = importlib.import_module(pkg_dir.name)
        ex = pkg._exported
        registered = "triton_op" if ex.traceable_triton() else "custom_op"
        assert registered == mode, (registered, mode)
        entry, symbol = ex.solution["entry_point"].split("::")
        launcher = getattr(importlib.import_module(f"{pkg.__name__}._solution." + entry.removesuffix(".py")), symbol)
        if mode == "triton_op":  # validated through the interpreter: load it as a GPU export would
            ex._kernel = launcher
        else:
            assert ex._load_kernel() is launcher, ex.kernel_error()
        args = _args(ex)
        assert ex.check(args) is None, ex.check(args)
        if ex.solution.get("destination_passing_style"):
            ref = pkg.reference(*args)
            ref = ref if isinstance(ref, tuple | list) else (ref,)

            def direct(args=args, ref=ref, launcher=launcher):
                outs = tuple(torch.empty_like(o) for o in ref)
                launcher(*args, *outs)
                return outs
        else:
            def direct(args=args, launcher=launcher):
                return launcher(*args)
        op = pkg.op
        overload = getattr(getattr(torch.ops, ex.meta["namespace"]), ex.meta["op_name"]).default
        fns = {"launcher": direct, "op": lambda op=op, args=args: op(*args),
               "dispatcher": lambda ov=overload, args=args: ov(*args)}
        with torch.no_grad():  # as the e2e harness and a model's inference call it
            pkg.reset_stats()
            t = _time(fns, calls, repeats, warmup)
            stats = pkg.stats()
        n_op_calls = 2 * (warmup + calls * repeats)
        assert stats["kernel"] == n_op_calls and stats["fallback"] == 0, stats  # every call took the kernel path
        out[ex.definition["name"]] = {
            "package": pkg.__name__, "shapes": [list(a.shape) for a in args if isinstance(a, torch.Tensor)],
            "dtypes": sorted({str(a.dtype).removeprefix("torch.") for a in args if isinstance(a, torch.Tensor)}),
            "times": t, "kernel_path_calls": stats["kernel"],
            "overhead_us": {k: t[k]["median_us"] - t["launcher"]["median_us"] for k in ("op", "dispatcher")},
        }
    return out


# -- parent -------------------------------------------------------------------------------------------------
def export_packages(dest: Path) -> Path:
    sys.path.insert(0, str(ROOT / "src"))
    from kernelcraft.export import export
    from kernelcraft.review.candidate import resolve

    src = dest / "src"
    src.mkdir(parents=True)
    for task, sol in KERNELS.items():
        r = resolve(str(FIXTURES / f"{task}.json"), sol, None, FIXTURES / task)
        out = export(r, "torch-op", dest / "exports" / task)
        shutil.copytree(Path(out["dest"]) / "src" / out["package"], src / out["package"])
    return src


def with_runtime(src: Path, runtime_text: str, dest: Path) -> Path:
    shutil.copytree(src, dest)
    for pkg in dest.iterdir():
        (pkg / "_runtime.py").write_text(runtime_text)
        shutil.rmtree(pkg / "__pycache__", ignore_errors=True)
    return dest


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-rev", action="append", default=[],
                    help="also measure the runtime of this git revision (alternating processes; repeatable)")
    ap.add_argument("--calls", type=int, default=10000, help="calls per timed repeat")
    ap.add_argument("--repeats", type=int, default=9, help="timed repeats per entry and process (median)")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=2, help="processes per (runtime, mode); the median is reported")
    ap.add_argument("--out", type=Path, help="JSON result file")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--src", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.src, a.calls, a.repeats, a.warmup)))
        return

    work = Path(tempfile.mkdtemp(prefix="kc_call_overhead_"))
    try:
        base = export_packages(work / "built")
        runtimes = {"working_tree": (ROOT / RUNTIME).read_text()}
        runtimes = {**{f"rev {rev}": _git("show", f"{rev}:{RUNTIME}") for rev in a.baseline_rev}, **runtimes}
        dirs = {name: with_runtime(base, text, work / f"rt{i}") for i, (name, text) in enumerate(runtimes.items())}
        raw: dict = {name: {m: [] for m in MODES} for name in runtimes}
        load = [os.getloadavg()]
        for _ in range(a.rounds):
            for name, d in dirs.items():
                for mode in MODES:
                    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTHONPATH")}
                    cmd = [sys.executable, __file__, "--child", mode, "--src", str(d), "--calls", str(a.calls),
                           "--repeats", str(a.repeats), "--warmup", str(a.warmup)]
                    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
                    if proc.returncode != 0:
                        raise SystemExit(f"{name} {mode} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
                    raw[name][mode].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            load.append(os.getloadavg())
    finally:
        shutil.rmtree(work, ignore_errors=True)

    results: dict = {}
    for name, modes in raw.items():
        for mode, runs in modes.items():
            for task in runs[0]:
                cell = {k: statistics.median(r[task]["times"][k]["median_us"] for r in runs)
                        for k in ("launcher", "op", "dispatcher")}
                results.setdefault(name, {}).setdefault(mode, {})[task] = {
                    "shapes": runs[0][task]["shapes"], "dtypes": runs[0][task]["dtypes"],
                    "median_us": cell,
                    "overhead_us": {k: cell[k] - cell["launcher"] for k in ("op", "dispatcher")},
                    "per_process_op_us": [r[task]["times"]["op"]["median_us"] for r in runs],
                }
    print(f"per eager call, microseconds (median of {a.rounds} processes x {a.repeats} repeats x {a.calls} calls); "
          "Triton launches are no-ops")
    print(f"{'runtime':<22} {'registration':<10} {'task':<24} {'launcher':>9} {'op':>8} {'dispatch':>9} {'op-launcher':>12}")
    for name, modes in results.items():
        for mode, tasks in modes.items():
            for task, c in tasks.items():
                m = c["median_us"]
                print(f"{name:<22} {mode:<10} {task:<24} {m['launcher']:9.2f} {m['op']:8.2f} {m['dispatcher']:9.2f} "
                      f"{c['overhead_us']['op']:12.2f}")
    if a.out:
        import torch
        import triton

        dirty = bool(_git("status", "--porcelain", "--", RUNTIME, "benchmarks/export_call_overhead.py").strip())
        record = {
            "what": "host-side cost per eager call of an exported torch-op, Triton launches replaced by no-ops "
                    "(benchmarks/export_call_overhead.py docstring); overhead = op - launcher",
            "command": "python " + " ".join(shlex.quote(x) for x in [str(Path(__file__).relative_to(ROOT)), *sys.argv[1:]]),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "git_head": _git("rev-parse", "HEAD").strip(), "working_tree_runtime_dirty": dirty,
            "environment": {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__,
                            "cpus": os.cpu_count(), "machine": platform.machine(), "torch_threads": 1,
                            "loadavg_1_5_15_per_round": load},
            "parameters": {"calls": a.calls, "repeats": a.repeats, "warmup": a.warmup, "rounds": a.rounds,
                           "rows": TOKENS, "grad": "torch.no_grad()"},
            "results": results,
        }
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
